"""Random walk: at every point, any runnable worker, uniformly.

The baseline every other strategy is measured against; it preempts at
almost every step, so it finds shallow races in few steps and deep orderings
(a worker preempted exactly once, at the right point) rarely.

Asked one step at a time (``next_task``, as plain mode does), every step is a
round trip through the coordinator. A controlled session asks for a *script*
instead (``next_script``, ``base.Scripting``): one random draw per step for
the next steps, drawn now, each uniform over [0, M) where M is the least
common multiple of 1 .. n (n workers). The worker of step t is
R_t[D_t mod |R_t|], R_t the runnable workers at t in ascending order, and
whoever reaches step t maps it: the workers hand the step to each other
directly, one handoff per switch of worker and none while the same worker
goes on (``controlled.channel``).

Why a script is the same random walk. The walk's law: at step t, given
everything that happened before, the worker is uniform over R_t. D_t was
drawn before any step of the script ran and nothing reads it before step t,
so given the past it is still uniform over [0, M); |R_t| divides M, so
D_t mod |R_t| is exactly uniform over the |R_t| positions, whatever R_t the
past left. Whether step t follows the script at all is decided by the past
alone, never by D_t: the script's length is fixed when it is drawn, and a
worker hands back to the coordinator only when it finishes its role or finds
nobody runnable. A worker that maps a draw needs R_t; only the step just
taken can have changed the set, and it was that worker's, so it lists the set
again (``controlled.gate``) when that step may have (it would block now, it
freed a lock a blocked worker waits for, the lock its step took is one
another parked worker waits at), again without looking at D_t. (Ending the
script because of the draw itself, say when the worker it names would take a
contended lock, would not keep the law: that worker would then be picked
with probability 1/k², not 1/k, at such steps.) Where the script ends, the
coordinator draws afresh, and the unused rest of the script is dropped
without being looked at (it is independent of everything that ran, so
dropping it biases nothing). By induction over the steps, every schedule has
the probability it has under the step-by-step walk. What does change is which
random draws a seed maps to: the same seed gives the same trace, but not the
trace the step-by-step walk gave it.

One difference remains, at the end of an execution: the coordinator notices
that the tracker settled (the drain is over) when a script ends, not at the
very step, as for PCT's leases. The schedule up to settling has the walk's
law; the coordinator keeps scripts short while draining
(``session.DRAIN_SCRIPT``), so few steps of drain follow it.

Script length: whatever lies past the point where a script ends is wasted,
so the length adapts (deterministically, from the steps the previous script
lasted): it doubles while scripts are used up, and shrinks to twice what was
used when one ends early. With more workers than one draw can serve (M beyond
a shared 64-bit slot, over 42 workers) every script is one step long: the
walk goes step by step through the coordinator.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import numpy.typing as npt

from shmstress.controlled.strategies.base import SchedulerView, StrategySpec, seeded_rng

FIRST_SCRIPT = 8
"""Steps in the first script of a run."""
SHORTEST_SCRIPT = 4
LONGEST_SCRIPT = 256
_DRAW_LIMIT = 1 << 62  # a draw must fit the shared int64 script slot
_BATCH = 4096  # draws made at once (one call instead of one per script)


@functools.cache
def draw_modulus(workers: int) -> int:
    """M: every possible count of runnable workers (1 .. ``workers``) divides it."""
    return math.lcm(*range(1, max(1, workers) + 1))


class RandomWalk:
    def __init__(self, seed: int) -> None:
        self._rng = seeded_rng(seed, "random_walk")
        # scripts draw from a generator of their own: asked step by step (plain mode), a
        # seed gives the walk it always gave
        self._draws = np.random.default_rng(
            seeded_rng(seed, "random_walk.scripts").getrandbits(128))
        self._length = FIRST_SCRIPT
        self._start = 0  # first step of the previous script of this execution
        self._drawn = 0  # its length (0: no script yet in this execution)
        self._modulus = 0  # M, for the workers of the scripts drawn into the batch
        self._batch = np.zeros(0, dtype=np.int64)
        self._used = 0  # draws of the batch handed out
        self.spec = StrategySpec("random_walk")

    def new_execution(self) -> bool:
        self._drawn = 0
        return True

    def next_task(self, view: SchedulerView) -> tuple[int, int]:
        runnable = view.runnable
        return runnable[self._rng.randrange(len(runnable))], 1

    def next_script(self, view: SchedulerView, limit: int) -> npt.NDArray[np.int64]:
        """Independent uniform draws over [0, M), one per step (module docstring)."""
        step = view.step
        if self._drawn:
            used = step - self._start
            if used >= self._drawn:
                self._length = min(LONGEST_SCRIPT, 2 * self._length)
            else:
                self._length = max(SHORTEST_SCRIPT, 2 * used)
        modulus = draw_modulus(view.workers)
        count = max(1, min(limit, self._length)) if modulus <= _DRAW_LIMIT else 1
        self._start = step
        self._drawn = count
        if count == 1:
            return np.array([self._rng.randrange(len(view.runnable))], dtype=np.int64)
        if modulus != self._modulus or self._used + count > len(self._batch):
            # the draws are independent, so where a batch starts changes nothing but which
            # draws a seed maps to (the rest of a batch drawn for another M is dropped)
            self._modulus = modulus
            self._batch = self._draws.integers(0, modulus, size=max(_BATCH, count),
                                               dtype=np.int64)
            self._used = 0
        start = self._used
        self._used = start + count
        return self._batch[start:start + count]

    def next_u64(self) -> int:
        return self._rng.getrandbits(64)
