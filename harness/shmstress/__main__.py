"""``python -m shmstress``: the command line, through its entry point."""

import sys

from shmstress.cli.entry import main

sys.exit(main())
