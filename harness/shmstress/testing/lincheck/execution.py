"""One execution of a program, in the execution's ``main``: the object, the lanes, the history,
the verdict.

``main`` makes the object under test and runs the prefix; each lane is a process of its own
that runs its operations one after the other; ``main`` waits for them, runs the suffix and
checks the history. Each operation's call and return are steps of the execution
(``plain.marks``), so the history's numbers are the interleaving's steps, and a reader finds
each operation in the interleaving printed under the table. The check runs aside from the
schedule (its model is made of shared memory of its own), and a history that is not
linearizable fails the execution as an assert would: the plain engine's failure, bundle and
replay then serve lincheck unchanged.

Columns of the table: lane ``i`` is process ``i - 1`` (the interleaving's ``lane #i``);
``main``, which runs the prefix and the suffix, is the last.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, cast

from shmstress.analysis.linearizability import Operation, Raised, check
from shmstress.analysis.linearizability_table import history_table
from shmstress.plain.marks import aside, mark
from shmstress.plain.scenario import ScenarioRef
from shmstress.render.linearizability import render_history_table
from shmstress.testing.lincheck.program import Call, Program
from shmstress.testing.lincheck.sequential_model import SequentialModel

Key = Callable[[Operation], Hashable]
_ARGUMENTS_SHOWN = 24  # characters of arguments a step's label keeps


class NotLinearizable(AssertionError):  # noqa: N818 - what the execution saw
    """The execution's history has no sequential order the model agrees with."""


@dataclass(frozen=True)
class Target:
    """The class under test, its model (a factory of fresh ones) and its partitioning key."""

    make: Callable[[], Any]
    model: Callable[[], Any]
    key: Key | None = None

    @classmethod
    def load(cls, target: str, model: str | None = None, key: str | None = None) -> Target:
        """Each named ``FILE.py:NAME`` or ``MODULE:NAME``, imported as a scenario is."""
        make = ScenarioRef.parse(target).load()
        model_class = ScenarioRef.parse(model).load() if model else None
        key_function = cast(Key, ScenarioRef.parse(key).load()) if key else None
        return cls(make, model_class or (lambda: SequentialModel(make)), key_function)


def run_program(target: Target, program: Program) -> None:
    """Run ``program`` on a fresh object; raise ``NotLinearizable`` with the table if its
    history is not."""
    obj = target.make()
    main = len(program.lanes)
    history = [perform(obj, call, main) for call in program.prefix]
    records: multiprocessing.Queue[list[Operation]] = multiprocessing.Queue()
    lanes = [multiprocessing.Process(target=lane, args=(obj, calls, number, records))
             for number, calls in enumerate(program.lanes)]
    for process in lanes:
        process.start()
    for _ in lanes:
        history += records.get()
    for process in lanes:
        process.join()
    history += [perform(obj, call, main) for call in program.suffix]
    with aside():
        verdict = check(history, target.model, key=target.key)
        if not verdict.linearizable:
            raise NotLinearizable(render_history_table(history_table(history, verdict)))


def lane(obj: Any, calls: tuple[Call, ...], number: int, records: Any) -> None:
    """A lane's process: its operations in order, then their records to ``main``."""
    records.put([perform(obj, call, number) for call in calls])


def perform(obj: Any, call: Call, process: int) -> Operation:
    """Call the operation between two steps that mark its call and its return. An exception
    is its result (the model's is compared with it), except a failed assert: the object's
    own invariant, which fails the execution as it would any plain-code test."""
    shown = ", ".join(repr(arg) for arg in call.args)
    if len(shown) > _ARGUMENTS_SHOWN:
        shown = shown[:_ARGUMENTS_SHOWN - 3] + "..."
    invoked = mark(f"call {call.name}({shown})")
    try:
        result: object = getattr(obj, call.name)(*call.args)
    except AssertionError:
        raise
    except Exception as error:  # the exception is its result, as the model's is
        result = Raised.of(error)
    responded = mark(f"{call.name} returned")
    return Operation(process, call.name, call.args, result, invoked, responded)
