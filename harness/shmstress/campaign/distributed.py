"""Spreading a campaign over hosts with pytest-xdist gateways (``--tx socket=…``, ``ssh=…``).

xdist does the distribution, worker start-up on each host and the result plumbing;
this module only turns a grid into the pytest command line and maps the exit code.
Every argument is a single ``--option=value`` word: xdist rewrites words that are
existing local paths for remote hosts, and rejects them outside its (deprecated)
rsync roots.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from shmstress.campaign.grid import GridSpec
from shmstress.core.exit_reason import ExitCode
from shmstress.core.signals import interruptible

INCOMPLETE_EXIT = ExitCode.BROKEN
"""A distributed campaign that did not finish its grid: pytest stopped with an internal
error (or another code it has no mapping for), or trials are missing from results.jsonl."""
_PYTEST_EXIT = {0: ExitCode.CLEAN, 1: ExitCode.FAILURE, 2: ExitCode.INTERRUPTED,
                4: ExitCode.USAGE}


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
    workers and the controller still writes what finished and renders the report. (A
    Ctrl-C at a terminal reaches pytest itself.) The signals are handled here, so pytest
    starts with SIGINT at its default even under a shell that ignores it for background
    jobs, and turns it into KeyboardInterrupt.
    """
    out_dir = out_dir.resolve()  # pytest runs in it, and must not read it relative to itself
    out_dir.mkdir(parents=True, exist_ok=True)
    with interruptible() as interrupt:
        child = subprocess.Popen(pytest_command(spec, out_dir, gateways), cwd=out_dir)
        while True:
            try:
                returncode = child.wait()
                break
            except KeyboardInterrupt:  # wait for pytest's teardown
                if interrupt.signal == signal.SIGTERM:
                    child.send_signal(signal.SIGINT)
    return _PYTEST_EXIT.get(returncode, INCOMPLETE_EXIT)
