"""Spreading a campaign over hosts with pytest-xdist gateways (``--tx socket=…``, ``ssh=…``).

xdist does the distribution, worker start-up on each host and the result plumbing;
this module only turns a grid into the pytest command line and maps the exit code.
Every argument is a single ``--option=value`` word: xdist rewrites words that are
existing local paths for remote hosts, and rejects them outside its (deprecated)
rsync roots.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import FrameType

from shmstress.campaign.grid import GridSpec
from shmstress.core.exit_reason import ExitReason

INCOMPLETE_EXIT = 4
"""A distributed campaign that did not finish its grid: pytest stopped with an internal
error (or another code it has no mapping for), or trials are missing from results.jsonl."""
_PYTEST_EXIT = {0: 0, 1: 1, 2: ExitReason.INTERRUPTED.exit_code, 4: 2}


def pytest_command(
    spec: GridSpec, out_dir: Path, gateways: Sequence[str], python: str = sys.executable
) -> list[str]:
    """``python -m pytest`` over the grid's trials, one xdist worker per gateway."""
    return [
        python, "-m", "pytest",
        "--config-file=/dev/null",  # the trials, not the caller's project settings
        "-p", "no:cacheprovider",
        "--import-mode=importlib",  # the anchor module by its own name; sys.path untouched
        "-p", "xdist",
        "-p", "shmstress",
        "--dist=load",
        *(f"--tx={gateway}" for gateway in gateways),
        f"--stress-grid={spec.to_json()}",
        f"--stress-report={out_dir}",
        f"--junitxml={out_dir / 'junit-campaign.xml'}",
        "-q",
        "--pyargs", "shmstress.pytest.campaign_session",
    ]


def run_distributed(spec: GridSpec, out_dir: Path, gateways: Sequence[str]) -> int:
    """Run the grid through pytest-xdist; returns a shmstress exit code.

    SIGTERM is passed on as SIGINT, which pytest answers like Ctrl-C: xdist stops its
    workers and the controller still writes what finished and renders the report.
    """
    out_dir = out_dir.resolve()  # pytest runs in it, and must not read it relative to itself
    out_dir.mkdir(parents=True, exist_ok=True)
    with _sigterm_forwarded_as_sigint() as forward_to:
        child = subprocess.Popen(pytest_command(spec, out_dir, gateways), cwd=out_dir)
        forward_to.append(child)
        while True:
            try:
                returncode = child.wait()
                break
            except KeyboardInterrupt:  # Ctrl-C reached pytest too; wait for its teardown
                continue
    return _PYTEST_EXIT.get(returncode, INCOMPLETE_EXIT)


@contextlib.contextmanager
def _sigterm_forwarded_as_sigint() -> Iterator[list[subprocess.Popen[bytes]]]:
    # A background job of a non-interactive shell starts with SIGINT ignored, and an ignored
    # signal stays ignored in the child; a handled one is reset to the default on exec, where
    # Python turns it into KeyboardInterrupt. So SIGINT is handled here while pytest runs.
    children: list[subprocess.Popen[bytes]] = []

    def forward(signum: int, frame: FrameType | None) -> None:
        for child in children:
            child.send_signal(signal.SIGINT)

    try:
        previous_term = signal.signal(signal.SIGTERM, forward)
        previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    except ValueError:  # not the main thread: leave signals alone
        yield children
        return
    try:
        yield children
    finally:
        signal.signal(signal.SIGTERM, previous_term)
        signal.signal(signal.SIGINT, previous_int)
