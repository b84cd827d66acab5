"""Shared test scaffolding: a gate that injects a hand-written interleaving at one point,
and the leak check that tells this test's segments from those of other runs on the machine."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

import psutil
import pytest

from shmstress.analysis.failure import analyse
from shmstress.analysis.story import Explanation
from shmstress.controlled.strategies import RandomWalk
from shmstress.controlled.strategies.base import SchedulerView, StrategySpec
from shmstress.core.processes import live_children
from shmstress.core.result import RunResult, Violation
from shmstress.core.runtime import Runtime
from shmstress.core.shm import live_segments, segment_owner
from shmstress.plugin.wording import wording_by_name
from shmstress.render.failure import failure_report


def segments_left_by_us(before: Iterable[str]) -> list[str]:
    """Segments that appeared since ``before`` and belong to this process or its children.

    A segment's name carries its owner's pid. Ours: this process, a live child, or
    a dead owner (a child coordinator that exited without unlinking). A segment of
    another live process is another run's (a parallel pytest worker, a benchmark)
    and not this test's leak.
    """
    ours = {os.getpid()} | {p.pid for p in live_children()}
    new = set(live_segments()) - set(before)
    return sorted(
        name for name in new
        if segment_owner(name) in ours or not psutil.pid_exists(segment_owner(name))
    )


class InjectAt:
    """When ``worker`` reaches point ``label`` (the ``nth`` time), run ``action`` there, once.

    The action runs other workers' steps in the middle of this worker's
    operation: a deterministic reproduction of one preemption.
    """

    def __init__(
        self, runtime: Runtime, worker: int, label: str, action: Callable[[], None], nth: int = 1
    ) -> None:
        self.runtime = runtime
        self.worker = worker
        self.label = label
        self.action = action
        self.remaining = nth
        self.fired = False
        self.inner: InjectAt | None = None

    def before_point(self, label: str) -> None:
        if self.inner is not None:
            self.inner.before_point(label)
        if self.fired or self.runtime.worker_id != self.worker or label != self.label:
            return
        self.remaining -= 1
        if self.remaining:
            return
        self.fired = True
        me = self.runtime.worker_id
        self.action()
        self.runtime.become(me)


def explain(result: RunResult, violation: Violation | None = None) -> Explanation | None:
    """The explanation (data) of ``result``'s principal violation, or of ``violation``."""
    wording = wording_by_name(result.config.tracker, result.config.params)
    analysis = analyse(result, wording, violation)
    return None if analysis is None else analysis.explanation


def render_snippet(result: RunResult) -> str:
    """The log snippet of ``result``'s principal violation, as a failing run prints it."""
    return failure_report(result).snippet or ""


def bundles_into(pytester: pytest.Pytester, out_dir: Path) -> None:
    """A conftest that points ``$SHMSTRESS_OUT`` at ``out_dir`` from a session fixture: set
    after the plugin configured itself, as tests/conftest.py does."""
    pytester.makeconftest(
        f"""
        import pytest

        @pytest.fixture(autouse=True, scope="session")
        def shmstress_out():
            with pytest.MonkeyPatch.context() as patch:
                patch.setenv("SHMSTRESS_OUT", {str(out_dir)!r})
                yield
        """
    )


class StepByStep:
    """Random walk asked one step at a time (no ``next_script``), as before scripts."""

    def __init__(self, seed: int) -> None:
        self._walk = RandomWalk(seed)

    @property
    def spec(self) -> StrategySpec:
        return self._walk.spec

    def new_execution(self) -> bool:
        return self._walk.new_execution()

    def next_task(self, view: SchedulerView) -> tuple[int, int]:
        return self._walk.next_task(view)

    def next_u64(self) -> int:
        return self._walk.next_u64()


def spy_on_hosts(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each plain session the runner opens from now on starts a fresh host (True)
    or forks one (False), in order."""
    from shmstress.plain import runner
    from shmstress.plain.footprints import Names
    from shmstress.plain.session import PlainSession
    from shmstress.plain.spec import PlainSpec

    hosts: list[bool] = []

    class Spy(PlainSession):
        def __init__(self, spec: PlainSpec, names: Names | None = None,
                     fresh_host: bool = False) -> None:
            hosts.append(fresh_host)
            super().__init__(spec, names, fresh_host)

    monkeypatch.setattr(runner, "PlainSession", Spy)
    return hosts
