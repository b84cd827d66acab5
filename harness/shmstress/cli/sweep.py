"""``shmstress sweep``: unlink the shared-memory segments of coordinators that died.

Only files of the user running it (as root: of root) are read or unlinked
(``core.shm.sweep_stale_segments``): a sweep as root is safe on a shared host."""

from __future__ import annotations

import argparse

from shmstress.cli.args import with_examples
from shmstress.cli.commands import add_command
from shmstress.core.config import SHM_DIR_ENV
from shmstress.core.shm import sweep_stale_segments


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = add_command(sub, "sweep",
                            description="Remove the shmstress-* segments in /dev/shm (or "
                            f"${SHM_DIR_ENV}) whose owning coordinator is gone (killed with "
                            "SIGKILL), and the segments its code under test left, as the run's "
                            "-created list says; live runs keep theirs. Only files owned by "
                            "the user running the sweep are read or removed.",
                            **with_examples("shmstress sweep   # after a kill -9, or in a CI "
                                            "job's cleanup"))
    parser.set_defaults(handler=_cmd_sweep)


def _cmd_sweep(args: argparse.Namespace) -> int:
    removed = sweep_stale_segments()
    listed = ": " + ", ".join(removed) if removed else ""
    print(f"removed {len(removed)} stale segment(s){listed}")
    return 0
