"""The bench's race inside a library call (issue 14): it runs, and its check is sound.

Whether noise helps or hurts there is a figure of ``shmstress bench`` (no timing here).
"""

from __future__ import annotations

from shmstress.api import Phase
from shmstress.bench.library_race import LibraryRaceTracker
from shmstress.bench.suite import LIBRARY_RACE, library_target, targets
from shmstress.core.config import RunConfig
from shmstress.core.exit_reason import ExitReason
from shmstress.core.shm import Arena
from shmstress.free.runner import run
from shmstress.plugin.assembly import assemble


def test_a_stale_write_back_by_another_writer_is_reported_at_the_next_step() -> None:
    """Writer 0 sets its key; another writer's copy from before that write is written back
    whole (what an overlapping call does): writer 0's next step reports its lost write."""
    with Arena() as arena:
        built = assemble(LibraryRaceTracker, "racy", {}, {"writer": 2}, arena,
                         stop_on_violation=False)
        tracker = built.tracker
        assert isinstance(tracker, LibraryRaceTracker)
        runtime = built.runtime
        runtime.attach(0, seed=1)
        writer = built.role(tracker, built.workers[0])
        assert writer.step(Phase.RUN)
        stale = tracker.table.get(1)  # another writer read the table before writer 0's set ...
        assert writer.step(Phase.RUN)  # ... writer 0's write was kept: no violation
        assert built.control.violation_count == 0
        tracker.table.clear()  # ... and writes its whole copy back, writer 0's value gone
        tracker.table.set(1, stale)
        writer.step(Phase.RUN)
        [found] = built.control.violation_records()
        assert found.worker == 0 and found.fields == (0, 2, 0)  # writer 0 set 2, read 0


def test_the_library_race_runs_in_free_mode_with_four_writers() -> None:
    target = targets((LIBRARY_RACE,))[0]
    assert target == library_target() and not target.dra
    result = run(RunConfig(tracker=target.tracker, seed=1, duration=0.3,
                           stop_on_first=False))
    assert [w.role for w in result.workers] == ["writer"] * 4
    assert result.points > 0 and not result.crashes
    assert result.exit_reason in (ExitReason.DURATION_REACHED, ExitReason.VIOLATION)
    assert {v.invariant for v in result.violations} <= {"own-write-kept"}
