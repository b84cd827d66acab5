"""``--trace``: shared memory that no primitive guards, in the user's code and in a library."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shmstress.analysis.plain_story import plain_story
from shmstress.controlled.strategies import PctSpec, spec_named
from shmstress.core.errors import PlainLimitError, ScenarioError
from shmstress.core.exit_reason import ExitCode
from shmstress.plain.board import MAX_SEGMENTS
from shmstress.plain.outcome import PlainEnd
from shmstress.plain.runner import Exploration, PlainResult, explore
from shmstress.plain.scenario import ScenarioRef
from shmstress.plain.spec import PlainSpec
from shmstress.plain.trace import plan, producer
from shmstress.repro.plain_bundle import from_outcome
from shmstress.repro.plain_replay import replay_plain
from shmstress.repro.replay import Verdict

ROOT = Path(__file__).resolve().parents[1]
NUMPY = ROOT / "examples" / "plain" / "numpy_counts.py"
LIBRARIES = Path(__file__).resolve().parent / "scenarios" / "libraries.py"
PREFIX = os.environ["SHMSTRESS_TESTS_PREFIX"]  # this worker's names in /dev/shm (conftest)


def search(where: Path, function: str, executions: int, trace: tuple[str, ...],
           seed: int = 1, strategy: str = "pct") -> tuple[PlainSpec, PlainResult]:
    spec = PlainSpec(ScenarioRef.parse(f"{where}:{function}"), trace=trace)
    return spec, explore(spec, Exploration(spec_named(strategy), seed, executions))


def _rmw(counts, block, data, n):  # type: ignore[no-untyped-def]
    counts[0] += 1
    block.buf[:n] = data
    return block.buf.tobytes()


def test_the_bytecode_walk_finds_what_a_subscript_touches() -> None:
    code_plan = plan(_rmw.__code__)
    touched = sorted((access.verb, access.container.text())
                     for access in code_plan.subscripts.values())
    assert touched == [("read", "counts"), ("write", "block.buf"), ("write", "counts")]
    line = _rmw.__code__.co_firstlineno + 3
    assert [chain.text() for chain in code_plan.lines[line]] == ["block.buf"]
    assert producer([], 0, 0) is None


def test_without_trace_a_numpy_race_is_invisible_and_with_it_found_and_replayed() -> None:
    _, blind = search(NUMPY, "racy", 60, trace=())
    assert blind.failing is None or "FileNotFoundError" in str(blind.failing.failure)
    # ... but never silently: the self-check saw the segment change with no step
    assert blind.exit_code is ExitCode.NOT_CONTROLLED, blind.uncontrolled
    assert any("changed block with no step that writes it" in line
               and "numpy_counts.py:" in line for line in blind.uncontrolled), blind.uncontrolled
    spec, result = search(NUMPY, "racy", 100, trace=(str(NUMPY),))
    failing = result.failing
    assert failing is not None and failing.failure is not None
    assert failing.failure.end is PlainEnd.FAILED
    assert "counts[0] is 1" in failing.failure.message
    (update,) = plain_story(failing).lost_updates
    assert update.what == "counts[0]"  # the element: its index is in the step
    assert failing.steps[update.read_step].what == "read counts[0]"
    assert failing.steps[update.read_step].value == 0
    assert failing.steps[update.write_step].line == failing.steps[update.read_step].line
    bundle = from_outcome("numpy_counts.py:racy", spec, PctSpec(), 1,
                          result.failing_index, failing)
    for _ in range(3):
        assert replay_plain(bundle).verdict is Verdict.REPRODUCED


def test_the_locked_numpy_twin_is_clean_under_trace() -> None:
    _, result = search(NUMPY, "locked", 150, trace=(str(NUMPY),), strategy="random_walk")
    assert result.failing is None, result.failing and result.failing.failure
    assert result.ends == {"finished": 150}


@pytest.mark.parametrize("use_lock", ["0", "1"])
def test_shared_memory_dict_loses_an_update_on_distinct_keys(
        use_lock: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The library's own lock (SHARED_MEMORY_USE_LOCK=1) wraps the generator function behind
    ``_modify_db``: it is held while the generator object is made, and released before the
    generator reads the block and writes it back. The interleaving shows it."""
    monkeypatch.setenv("SHARED_MEMORY_USE_LOCK", use_lock)
    spec, result = search(LIBRARIES, "distinct_keys", 100, trace=("shared_memory_dict",))
    failing = result.failing
    assert failing is not None and failing.failure is not None, result.ends
    assert "a write was lost" in failing.failure.message
    (update,) = plain_story(failing).lost_updates
    assert update.what == "self._memory_block.buf"
    assert failing.steps[update.write_step].file == "dict.py"
    labels = [step.label for step in failing.steps if step.worker == update.worker]
    if use_lock == "1":
        release = labels.index("release _lock")
        assert release < labels.index("use self._memory_block.buf", release)  # read after it
    else:
        assert "acquire _lock" not in labels
    bundle = from_outcome("libraries.py:distinct_keys", spec, PctSpec(), 1,
                          result.failing_index, failing)
    assert replay_plain(bundle).verdict is Verdict.REPRODUCED


def test_segments_a_scenario_leaves_are_unlinked(tmp_path: Path) -> None:
    leaky = tmp_path / "leaky.py"
    leaky.write_text(
        "from multiprocessing import shared_memory\n"
        "def scenario():\n"
        f"    shared_memory.SharedMemory(name='{PREFIX}leak', create=True, size=64)\n")
    _, result = search(leaky, "scenario", 5, trace=())
    assert result.ends == {"finished": 5}  # a leftover would make the next create fail
    assert not os.path.exists(f"/dev/shm/{PREFIX}leak")


def test_an_unknown_trace_target_is_one_line() -> None:
    with pytest.raises(ScenarioError, match="--trace no_such_module: no such file"):
        search(NUMPY, "racy", 1, trace=("no_such_module",))


def test_a_segment_past_the_limit_is_refused_and_not_left(tmp_path: Path) -> None:
    many = tmp_path / "many.py"
    many.write_text(
        "from multiprocessing import shared_memory\n"
        "def scenario():\n"
        f"    for index in range({MAX_SEGMENTS + 1}):\n"
        f"        shared_memory.SharedMemory(name=f'{PREFIX}many_{{index}}', create=True,\n"
        "                                   size=8)\n")
    _, result = search(many, "scenario", 1, trace=())
    failing = result.failing
    assert failing is not None and failing.failure is not None
    assert PlainLimitError.__name__ in failing.failure.message, failing.failure.message
    assert not [name for name in os.listdir("/dev/shm") if name.startswith(f"{PREFIX}many")]
