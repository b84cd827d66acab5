"""``shmstress sweep``: unlink the shared-memory segments of coordinators that died."""

from __future__ import annotations

import argparse

from shmstress.cli.args import with_examples
from shmstress.core.shm import sweep_stale_segments


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("sweep", help="unlink segments left by dead coordinators",
                            description="Remove /dev/shm/shmstress-* segments whose owning "
                            "coordinator is gone (killed with SIGKILL); live runs keep theirs.",
                            **with_examples("shmstress sweep   # after a kill -9, or in a CI "
                                            "job's cleanup"))
    parser.set_defaults(handler=_cmd_sweep)


def _cmd_sweep(args: argparse.Namespace) -> int:
    removed = sweep_stale_segments()
    listed = ": " + ", ".join(removed) if removed else ""
    print(f"removed {len(removed)} stale segment(s){listed}")
    return 0
