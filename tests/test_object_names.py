"""An object of the scenario is named by the variable its creation line assigns it to, also
when the line makes several (``first, second = Lock(), Lock()``): an explanation of a race
between two locks made on one line named both after that line."""

from __future__ import annotations

import sys
from pathlib import Path

from shmstress.plain.runner import Exploration, explore
from shmstress.plain.runtime import inferred_name
from shmstress.plain.scenario import ScenarioRef
from shmstress.plain.spec import PlainSpec

SCENARIOS = Path(__file__).resolve().parent / "scenarios"


def _made(word: str = "lock") -> str:
    """What a constructor called on the caller's line names its object."""
    return inferred_name(sys._getframe(1), word)


class _Holder:
    def __init__(self) -> None:
        self.reader, self.writer = _made(), _made()


def test_each_place_of_an_unpacking_names_its_object() -> None:
    first, second = _made(), _made()
    assert (first, second) == ("first", "second")
    [left, right] = [_made(), _made()]
    assert (left, right) == ("left", "right")
    holder = _Holder()
    assert (holder.reader, holder.writer) == ("reader", "writer")
    one = _made()
    assert one == "one"


def test_what_no_place_names_is_named_by_its_line() -> None:
    made: list[str] = []
    made.append(_made())  # no assignment
    here = f"lock@{Path(__file__).name}:{sys._getframe().f_lineno - 1}"
    assert made == [here]
    head, *tail = _made(), _made()  # a starred place
    assert head == "head" and tail[0].startswith("lock@")
    split, other = (_made(),
                    _made())  # a statement over two lines: its first line does not parse
    assert split.startswith("lock@") and other.startswith("lock@")
    pair = (_made(), _made())  # one name for both: the runtime numbers the second
    assert pair == ("pair", "pair")


def test_a_race_between_two_locks_made_on_one_line_names_each() -> None:
    spec = PlainSpec(ScenarioRef.parse(f"{SCENARIOS / 'two_locks.py'}:racy"))
    result = explore(spec, Exploration(seed=1, executions=200))
    failing = result.failing
    assert failing is not None and failing.failure is not None, result.ends
    labels = {step.label for step in failing.steps}
    assert {"acquire first", "release first", "acquire second", "release second"} <= labels
    assert {"write counter.value", "write done.value"} & labels, labels
