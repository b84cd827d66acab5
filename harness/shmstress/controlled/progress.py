"""No progress: tell an execution that cannot finish from one that is only long.

An execution that reaches its step bound with workers still running either
needed more steps, or was spinning: every worker left waits for something no
one will do (a wake-up that was lost, a flag nobody sets). The step bound alone
cannot tell them apart, so at the bound the coordinator *probes*: it goes on
for a few rounds in which every runnable worker, in turn, takes exactly one
step, and it compares the tracker's shared state after every step with the
state at the bound.

The criterion: the execution makes **no progress** when, over at least
``PROBE_ROUNDS`` rounds in which every runnable worker took a step, no step
changed the tracker's shared arrays, no worker finished its role, none raised
or found a violation, and every runnable worker is going round a loop (its
last turns are the same points twice over: a spin, not a long read-only
operation such as a scan, which is given up to ``MAX_ROUNDS`` rounds to
finish or write). The probe stops at the first step that changes anything
(the execution then ends at the step bound as before), so a long but live
execution pays about one step for it.

Why this is sound for what it claims: a worker's next steps depend on shared
state and on its own local state. With shared state frozen, the workers can
only come out of it through local state: a worker counting its turns before it
gives up, a back-off that ends. The probe gives each of them at least
``PROBE_ROUNDS`` turns, so a local count shorter than that is seen ending; a
longer one whose loop repeats its points is the limit: such a worker is
reported as not progressing (raise ``--max-steps`` if the wait is by design
longer than the bound). Harness state is not the
tracker's state: taking and releasing a lock, or the oracle's ghost arrays,
do not count as progress. Workers blocked on a lock take no step; the workers
they wait for are in the probe, and a state where nobody is runnable is the
ordinary deadlock. The probe is fair, unlike the strategy that reached the
bound (PCT starves a low-priority worker while a high-priority one spins
without yielding): a worker that could end the wait gets its turns, so a
starved worker is not mistaken for a stuck one.

The probe's steps are recorded like any other, and its choices (round robin
over the runnable workers) depend only on the state reached, so a replay that
runs the same steps up to the bound probes the same way and reaches the same
verdict.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Protocol

from shmstress.core.result import NO_PROGRESS
from shmstress.core.trace import Step

__all__ = ["NO_PROGRESS", "PROBE_ROUNDS", "ProbeEnd", "ProbeResult", "probe", "probe_capacity",
           "spin_labels", "stall_start"]

PROBE_ROUNDS = 8
"""Turns each runnable worker gets in the probe at least (the shortest local wait it tells
from none)."""
MAX_ROUNDS = 64
"""Turns at most: a worker whose turns do not repeat by then is taken to be on its way."""


def probe_capacity(workers: int) -> int:
    """The most steps a probe takes: the room past the step bound a session keeps for it."""
    return MAX_ROUNDS * max(1, workers)


class ProbeEnd(enum.Enum):
    PROGRESS = "progress"  # something changed: the execution was only long
    STALLED = "stalled"  # nothing changed in every round: no progress
    DEADLOCK = "deadlock"  # nobody runnable, somebody blocked on a lock
    FINISHED = "finished"  # nobody runnable, nobody blocked: every worker finished


class Stepper(Protocol):
    """What the probe needs from the coordinator."""

    def runnable(self) -> tuple[list[int], bool]:
        """The workers that may take a step, and whether any other waits for a lock."""

    def take(self, worker: int) -> None:
        """Grant ``worker`` exactly one step and wait until it parks or finishes."""

    def settled(self, worker: int) -> bool:
        """Did the step just taken end the worker's role, raise, or find a violation?"""

    def state(self) -> Hashable:
        """The tracker's shared state, comparable with ``==``."""


@dataclass(frozen=True)
class ProbeResult:
    end: ProbeEnd
    since: int  # the step the probe began at
    turns: Sequence[tuple[int, str]]  # (worker, label) of every step the probe took


def probe(stepper: Stepper, since: int, label: Callable[[int], str]) -> ProbeResult:
    """Take up to ``PROBE_ROUNDS`` fair rounds of single steps; see the module's criterion.

    ``label(worker)`` is the point the worker is parked at (the step it would take).
    """
    before = stepper.state()
    turns: list[tuple[int, str]] = []
    taken: dict[int, list[str]] = {}
    for rounds in range(1, MAX_ROUNDS + 1):
        runnable, blocked = stepper.runnable()
        if not runnable:
            end = ProbeEnd.DEADLOCK if blocked else ProbeEnd.FINISHED
            return ProbeResult(end, since, tuple(turns))
        for worker in runnable:
            if worker not in stepper.runnable()[0]:
                continue  # a turn before took the lock it waits at: it may not step now
            turns.append((worker, label(worker)))
            taken.setdefault(worker, []).append(turns[-1][1])
            stepper.take(worker)
            if stepper.settled(worker) or stepper.state() != before:
                return ProbeResult(ProbeEnd.PROGRESS, since, tuple(turns))
        if rounds >= PROBE_ROUNDS and all(repeats(taken.get(w, [])) for w in runnable):
            return ProbeResult(ProbeEnd.STALLED, since, tuple(turns))
    return ProbeResult(ProbeEnd.PROGRESS, since, tuple(turns))  # still on its way, read-only


def repeats(labels: Sequence[str]) -> bool:
    """Do the last turns go round a loop: the last ``2p`` labels two copies of ``p`` of them?
    A worker doing a long read-only operation (a scan of many points) does not; a spin
    does, after its second time round."""
    return any(labels[-2 * p:-p] == labels[-p:] for p in range(1, len(labels) // 2 + 1))


def spin_labels(result: ProbeResult, worker: int) -> tuple[str, ...]:
    """The distinct points ``worker`` went round in the probe, in first-taken order."""
    return tuple(dict.fromkeys(label for w, label in result.turns if w == worker))


STORY_REACH = 400
"""How far before the stall the explanation's window may begin (steps)."""


def stall_start(result: ProbeResult, steps: Sequence[Step]) -> int:
    """Where the story of a stall begins: the last two steps each spinning worker took before
    it began going round (its check, then the step into the wait), and the last step of every
    other worker, within ``STORY_REACH`` steps of the latest of them."""
    spinning = {w: set(spin_labels(result, w)) for w, _ in result.turns}
    wanted = {w: 2 if w in spinning else 1 for w in {s.worker for s in steps}}
    found: list[int] = []
    for index in range(min(result.since, len(steps)) - 1, -1, -1):
        step = steps[index]
        if wanted.get(step.worker, 0) and step.label not in spinning.get(step.worker, ()):
            wanted[step.worker] -= 1
            found.append(index)
            if not any(wanted.values()):
                break
    if not found:
        return result.since
    latest = max(found)
    return min(i for i in found if i >= latest - STORY_REACH)
