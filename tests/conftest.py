"""Suite-wide hygiene: every test must leave no child process and no shared-memory segment."""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from shmstress.core.config import SHM_DIR_ENV
from shmstress.core.processes import live_children
from shmstress.core.shm import SHM_DIR, live_segments
from tests.helpers import segments_left_by_us

# The scenarios that model real libraries name their own files, segments and semaphores
# in /dev/shm (tests/scenarios: ``PREFIX``), as real libraries do. Each suite process
# gets names of its own, so that two suite workers, or two suites on one machine, never
# share them; set here, before any test module imports a scenario.
os.environ["SHMSTRESS_TESTS_PREFIX"] = f"shmstress_tests_{os.getpid()}_"

# A suite started in the background of a script (``cmd &``, nohup) inherits SIGINT
# ignored, and so would every command a test starts and then interrupts: each Ctrl-C
# test would fail for how the suite was launched. A handler here is reset to the default
# in every program the suite runs (a handler does not survive exec; an ignore does).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True, scope="session")
def failure_artifacts_in_tmp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Failing runs write bundles and run.log into $SHMSTRESS_OUT: not into the tree.

    An explicitly set SHMSTRESS_OUT is kept: `tox -e stress` points it at the directory
    the nightly job uploads, so a failing stress test's bundle reaches the artifact.
    """
    if os.environ.get("SHMSTRESS_OUT"):
        yield
        return
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SHMSTRESS_OUT", str(tmp_path_factory.mktemp("shmstress-out")))
        yield


@pytest.fixture(autouse=True)
def no_leaks() -> Iterator[None]:
    segments_before = set(live_segments())
    children_before = {p.pid for p in live_children()}
    yield
    deadline = time.monotonic() + 5.0
    while True:
        leaked_children = [p for p in live_children() if p.pid not in children_before]
        leaked_segments = segments_left_by_us(segments_before)
        if not (leaked_children or leaked_segments) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert not leaked_children, f"test left child processes: {leaked_children}"
    assert not leaked_segments, f"test left shared memory segments: {leaked_segments}"


@pytest.fixture
def private_shm(tmp_path: Path) -> Iterator[tuple[dict[str, str], Path]]:
    """An environment whose segments live in a directory of their own, and that directory:
    another run's start-up sweep can neither remove them first nor be taken for our leak
    (for commands a test signals or kills)."""
    private = SHM_DIR / f"shmstress-test-{os.getpid()}-{tmp_path.name}"
    private.mkdir()
    try:
        yield {**os.environ, SHM_DIR_ENV: str(private)}, private
    finally:
        shutil.rmtree(private, ignore_errors=True)
