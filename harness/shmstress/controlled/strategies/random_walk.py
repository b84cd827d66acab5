"""Random walk: at every point, any runnable worker, uniformly.

The baseline every other strategy is measured against; it preempts at
almost every step, so it finds shallow races in few steps and deep orderings
(a worker preempted exactly once, at the right point) rarely.

Asked one step at a time (``next_task``, as plain mode does), every step is a
round trip through the coordinator. A controlled session asks for a *script*
instead (``next_script``, ``base.Scripting``): the choices of the next steps,
drawn now, which the workers follow by handing the step to each other
directly, one handoff per switch of worker and none while the same worker
goes on.

Why a script is the same random walk. The walk's law: at step t, given
everything that happened before, the worker is uniform over R_t, the set of
runnable workers at t. The script drawn at step s holds independent uniform
draws D_s, D_s+1, ... over R_s, made before any of those steps run. Step t
uses D_t only while the script still holds, and it holds at t only if
R_t = R_s. Only the step just taken can change the runnable set, so the worker
that took it tests, at its next point and before it reads D_t, whether it did
(``controlled.gate``): it would block there, it freed a lock a blocked worker
waits for, or the lock its step took is one another parked worker waits at; a
worker that finishes hands back to the coordinator too. Whether the script
still holds at t is thus decided by what ran before t, that is by
D_s .. D_t-1 and the program, never by D_t; so given the past, D_t is still
uniform over R_s = R_t, which is the walk's law. (Ending the script because
of the entry D_t itself, say when the worker it names would take a contended
lock, would not be: that worker would then be picked with probability 1/k²,
not 1/k, at such steps.) Where the script ends, the coordinator draws afresh
over the runnable set it sees then, and the unused rest of the script is
dropped without being looked at (it is independent of everything that ran,
so dropping it biases nothing). By induction over the steps, every schedule
has the probability it has under the step-by-step walk. What does change is
which RNG draws a seed maps to: the same seed gives the same trace, but not
the trace the step-by-step walk gave it.

One difference remains, at the end of an execution: the coordinator notices
that the tracker settled (the drain is over) when a script ends, not at the
very step, as for PCT's leases. The schedule up to settling has the walk's
law; the coordinator keeps scripts short while draining
(``session.DRAIN_SCRIPT``), so few steps of drain follow it.

Script length: drawing the choices costs RNG time, and whatever lies past the
point where a script ends is wasted, so the length adapts (deterministically,
from the steps the previous script lasted): it doubles while scripts are used
up, and shrinks to twice what was used when one ends early.
"""

from __future__ import annotations

import sys
from array import array
from dataclasses import dataclass

from shmstress.controlled.strategies.base import (
    SchedulerView,
    SearchSpace,
    Strategy,
    StrategySpec,
    seeded_rng,
)

FIRST_SCRIPT = 8
"""Steps in the first script of a run."""
SHORTEST_SCRIPT = 4
LONGEST_SCRIPT = 256


@dataclass(frozen=True)
class RandomWalkSpec(StrategySpec):
    """Random walk: it has no parameters."""

    name = "random_walk"
    searches = True

    def build(self, seed: int, space: SearchSpace) -> Strategy:
        return RandomWalk(seed)


class RandomWalk:
    def __init__(self, seed: int) -> None:
        self._rng = seeded_rng(seed, "random_walk")
        self._length = FIRST_SCRIPT
        self._start = 0  # first step of the previous script of this execution
        self._drawn = 0  # its length (0: no script yet in this execution)
        self.spec = RandomWalkSpec()

    def new_execution(self) -> bool:
        self._drawn = 0
        return True

    def next_task(self, view: SchedulerView) -> tuple[int, int]:
        runnable = view.runnable
        return runnable[self._rng.randrange(len(runnable))], 1

    def next_script(self, view: SchedulerView, limit: int) -> list[int]:
        """Independent uniform choices over the runnable set, one per step (module docstring)."""
        step = view.step
        if self._drawn:
            used = step - self._start
            if used >= self._drawn:
                self._length = min(LONGEST_SCRIPT, 2 * self._length)
            else:
                self._length = max(SHORTEST_SCRIPT, 2 * used)
        count = max(1, min(limit, self._length))
        self._start = step
        self._drawn = count
        runnable = view.runnable
        if len(runnable) == 1:  # nothing to draw: the walk has no other choice
            return [runnable[0]] * count
        # randrange(choices) per step, as Random._randbelow_with_getrandbits draws it: a
        # getrandbits(bits) per try, rejected while >= choices. getrandbits(k <= 32) is the top
        # k bits of the generator's next 32-bit output, and getrandbits(32 * n) is its next n
        # outputs, the first in the lowest bits: so the outputs are fetched n at a time, never
        # more than the entries still to fill (each takes at least one), and the generator
        # ends where the call-per-try loop left it. The same draws, hence the same trace for
        # a seed, for a few C calls per script instead of one or two Python-level calls per
        # step.
        choices = len(runnable)
        shift = 32 - choices.bit_length()
        draw = self._rng.getrandbits
        script: list[int] = []
        while len(script) < count:
            wanted = count - len(script)
            outputs = array("I", draw(32 * wanted).to_bytes(4 * wanted, "little"))
            if sys.byteorder == "big":
                outputs.byteswap()
            script += [runnable[pick] for pick in (output >> shift for output in outputs)
                       if pick < choices]
        return script

    def next_u64(self) -> int:
        return self._rng.getrandbits(64)
