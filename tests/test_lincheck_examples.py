"""Every example of examples/lincheck/ searched as a user runs it: each racy one found with
Hypothesis' default settings, shrunk to the smallest program an enumeration finds, replayed
from the database and from its bundle; each correct twin passing 200 examples. Nightly: on a
loaded two-core machine a search takes minutes (the default suite has the counters, small).
"""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Iterator
from pathlib import Path

import hypothesis
import pytest
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase

from shmstress.controlled.strategies import DporSpec
from shmstress.core.files import write_text_atomically
from shmstress.plain.runner import Exploration, explore, replay
from shmstress.repro.plain_bundle import peek_plain
from shmstress.testing.lincheck.check import LincheckFailure, check_linearizable
from shmstress.testing.lincheck.program import Call, Program
from shmstress.testing.lincheck.scenario_file import failure_source
from shmstress.testing.lincheck.search import Plan

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "lincheck"
KEY = f"{EXAMPLES / 'kvmap.py'}:key_of"
QUEUE_MODEL = f"{EXAMPLES / 'bounded_queue.py'}:QueueModel"
RACY = [(f"{EXAMPLES / 'counter.py'}:RacyCounter", None, None),
        (f"{EXAMPLES / 'bounded_queue.py'}:RacyQueue", None, QUEUE_MODEL),
        (f"{EXAMPLES / 'kvmap.py'}:RacyResizeMap", KEY, None),
        pytest.param(f"{EXAMPLES / 'assume_cache.py'}:UnorderedEventsCache", None, None,
                     marks=pytest.mark.xfail(strict=False, reason=(
                         "a caller stalls between popping another's event and delivering "
                         "it while the owner returns: 0.5 to 1% of the executions of "
                         "generated programs at each pace; none in 100 examples (seeds 1-6)"
                         )))]
CORRECT = [(f"{EXAMPLES / 'counter.py'}:LockedCounter", None, None),
           (f"{EXAMPLES / 'bounded_queue.py'}:LockedQueue", None, QUEUE_MODEL),
           (f"{EXAMPLES / 'kvmap.py'}:KeyedMap", KEY, None),
           (f"{EXAMPLES / 'assume_cache.py'}:OrderedEventsCache", None, None)]
EXPLORED = 400  # DPOR executions per enumerated program: enough to finish on these


def _name(target: str) -> str:
    return target.rpartition(":")[2]


def fails_under_some_schedule(plan: Plan, program: Program) -> bool:
    """Whether a search of the schedules of ``program`` (DPOR) finds a failing one."""
    with tempfile.TemporaryDirectory(prefix="shmstress-enumerated-") as folder:
        scenario = Path(folder) / "enumerated.py"
        write_text_atomically(scenario, failure_source(plan.names, program))
        result = explore(plan.spec(scenario), Exploration(DporSpec(), 0, EXPLORED))
        return result.failing is not None


def candidates(calls: list[Call]) -> Iterator[Program]:
    """Programs of two lanes of one or two of ``calls``, smallest first, each pair of lanes
    once (the other order is the same program with its processes renamed)."""
    lanes = [(call,) for call in calls] + [pair for pair in itertools.product(calls, repeat=2)]
    by_size = sorted(itertools.combinations_with_replacement(lanes, 2),
                     key=lambda pair: len(pair[0]) + len(pair[1]))
    for first, second in by_size:
        yield Program((), (first, second))


def smallest_failing(plan: Plan, shrunk: Program) -> Program | None:
    """The smallest failing program of at most 2 lanes of at most 2 operations, by
    enumeration over the calls the shrunk program makes and each operation's simplest."""
    calls = {call for part in (shrunk.prefix, *shrunk.lanes, shrunk.suffix) for call in part}
    for name, arguments in plan.operations.calls:
        calls.add(Call(name, hypothesis.find(st.tuples(*arguments), lambda _: True)))
    ordered = sorted(calls, key=lambda call: call.describe())
    return next((program for program in candidates(ordered)
                 if fails_under_some_schedule(plan, program)), None)


@pytest.mark.nightly
@pytest.mark.parametrize(("target", "key", "model"), RACY,
                         ids=["RacyCounter", "RacyQueue", "RacyResizeMap",
                              "UnorderedEventsCache"])
def test_each_racy_example_is_found_shrunk_and_replayed(target: str, key: str | None,
                                                        model: str | None,
                                                        tmp_path: Path) -> None:
    database = DirectoryBasedExampleDatabase(str(tmp_path / "examples"))
    with pytest.raises(LincheckFailure) as found:
        check_linearizable(target, key=key, model=model,
                           settings=hypothesis.settings(database=database), out=tmp_path / "out")
    result, files = found.value.result, found.value.files
    failing = result.failing
    assert failing is not None and files.bundle is not None
    shrunk = failing.program
    print(f"{_name(target)}: first failure at execution {result.tally.first_failure} of "
          f"{result.tally.executions} ({result.tally.examples} examples); shrunk to "
          f"{shrunk.describe()!r}")

    smallest = smallest_failing(result.plan, shrunk)
    print(f"{_name(target)}: smallest by enumeration: "
          f"{smallest.describe() if smallest else None!r}")
    if smallest is not None:
        assert len(shrunk.lanes) <= 2 and shrunk.widest <= 2, shrunk.describe()

    stored_only = hypothesis.settings(database=database, phases=[hypothesis.Phase.reuse])
    with pytest.raises(LincheckFailure) as again:
        check_linearizable(target, key=key, model=model, settings=stored_only,
                           out=tmp_path / "out")
    stored = again.value.result.failing
    assert again.value.result.tally.first_failure == 1 and stored is not None
    assert stored.program == shrunk
    assert [s.step for s in stored.outcome.steps] == [s.step for s in failing.outcome.steps]

    bundle = peek_plain(files.bundle)
    assert bundle is not None
    replayed = replay(bundle.spec(), bundle.steps, bundle.execution_seed)
    assert replayed.failed
    assert [s.step for s in replayed.steps] == [s.step for s in failing.outcome.steps]


@pytest.mark.nightly
@pytest.mark.parametrize(("target", "key", "model"), CORRECT,
                         ids=[_name(t) for t, *_ in CORRECT])
def test_each_correct_twin_passes_200_examples(target: str, key: str | None,
                                               model: str | None) -> None:
    result = check_linearizable(target, key=key, model=model,
                                settings=hypothesis.settings(max_examples=200, database=None))
    print(f"{_name(target)}: {result.tally.examples} examples, "
          f"{result.tally.executions} executions, {result.tally.ends}")
    assert result.failing is None and result.tally.executions >= 200


@pytest.mark.parametrize(("target", "key", "model"), CORRECT,
                         ids=[_name(t) for t, *_ in CORRECT])
def test_each_correct_twin_passes_a_few_examples(target: str, key: str | None,
                                                 model: str | None) -> None:
    """The default suite's version of the 200 examples above."""
    result = check_linearizable(target, key=key, model=model,
                                settings=hypothesis.settings(max_examples=8, database=None))
    assert result.failing is None and result.tally.executions >= 8
