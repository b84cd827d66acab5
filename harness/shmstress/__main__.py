"""``python -m shmstress``: the command line."""

import sys

from shmstress.cli.main import main

sys.exit(main())
