"""Portfolio: several strategies taking turns, execution by execution (the default).

No single strategy finds every bug soonest, and each misses some bugs it will
never find at any budget: PCT at depth d misses a bug that needs more than
d-1 preemptions among workers that never yield; PCT's ``demote`` rule for
spinners misses the DRA tracker's ``events-unordered`` (0 of 10 runs of
1,000 executions), which random walk finds in about 18; random walk
rarely finds a bug that needs one worker preempted at one exact step while
many others run. Coyote's test engine answers this with a portfolio (random
walk interleaved with PCT at rising bounds), and so does this module: each
execution is handed to one member, in a fixed cycle (``Mix``), so the cost of
a bug is roughly the cycle's length over the turns of its best member, times
that member's executions, and no bug one member finds is missed.

Depth escalation: a deep PCT member (depth 4, then 5) joins the cycle only
once the run has spent a number of executions (``Stage.start``) on the
shallower ones, since on bugs the shallow members find their turns would only
dilute the cycle, and a bug that needs four or more preemptions is rare.

Reproducibility: every member has its own RNG, seeded from the run's seed and
the member's place in the mix, and the turns depend only on the execution's
index: the same seed gives the same executions. The random walk member takes the
run's seed itself: its turns are the executions ``--strategy random_walk`` runs
with that seed, one after the other, so where random walk alone finds a bug in k
executions the portfolio finds it by random walk's k-th turn, whatever the draws
(on plain code, by execution 2k - 1 of the lead). A member keeps its state
between its turns (PCT learns the length of executions, bounded exhaustive
search walks its tree); a member that has nothing left to try (the bounded
search is complete) leaves the cycle, and the portfolio ends when none is left.

The member that runs an execution is ``active``; the controlled session asks
it directly (``base.acting``), so random walk keeps its scripts (``Scripting``)
and PCT its leases, and the portfolio costs nothing per step.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from shmstress.controlled.strategies.base import (
    SchedulerView,
    SearchSpace,
    Strategy,
    StrategySpec,
    seeded_rng,
)
from shmstress.controlled.strategies.dpor import DporSpec
from shmstress.controlled.strategies.pct import PctSpec
from shmstress.controlled.strategies.random_walk import RandomWalkSpec

Build = Callable[[StrategySpec, int], Strategy]
"""Builds a member from its spec and its seed (``StrategySpec.build``, as a member)."""


@dataclass(frozen=True)
class Stage:
    """From execution ``start`` on, members take turns in the order ``cycle`` names them."""

    start: int
    cycle: tuple[int, ...]  # indices into Mix.members


@dataclass(frozen=True)
class Mix:
    """The members and when each takes its turn."""

    members: tuple[StrategySpec, ...]
    stages: tuple[Stage, ...]

    def stage(self, execution: int) -> Stage:
        chosen = self.stages[0]
        for stage in self.stages:
            if stage.start <= execution:
                chosen = stage
        return chosen


RW = RandomWalkSpec()
D1 = PctSpec(depth=1)
D2 = PctSpec(depth=2)
D3 = PctSpec(depth=3)
D4 = PctSpec(depth=4)
D5 = PctSpec(depth=5)
ASIDE = PctSpec(depth=3, spin="aside")
DPOR = DporSpec()

DEFAULT_MIX = Mix(
    members=(RW, D2, D3, ASIDE, D4, D5, DPOR),
    stages=(
        Stage(0, (2, 0, 1, 1, 0, 6)),
        Stage(200, (0, 1, 2, 0, 1, 3, 6)),
        Stage(500, (0, 1, 2, 0, 1, 3, 4, 6)),
        Stage(5000, (0, 1, 2, 0, 1, 3, 4, 5, 6)),
    ),
)
"""The cycle of plain code and of trackers that do not declare their accesses: for the
first 200 executions random walk and PCT at depth 2 a third each, PCT at depth 3 and DPOR
a sixth each; then random walk and PCT at depth 2 two sevenths each, PCT at depth 3 with
each spin rule and DPOR a seventh each; depth 4, then 5, join once 500, then 5,000
executions found nothing.

Measured per member on the SCTBench ports (3 seeds, 150 executions each): random walk
finds most programs in one or two executions but never the ``reorder`` ones, which PCT
finds in tens (depth 2 soonest on ``reorder_3_bad``, ``bluetooth_driver_bad``); on the
DRA tracker random walk finds ``events-unordered`` (median 59 of its own executions, PCT
``aside`` 231, ``demote`` never) and the seed race as soon as PCT at depth 3 or 4 (about
20), depth 2 about six times later. A portfolio of k equal turns costs a program about k
times its best member's executions, so the shares follow the members that are best
somewhere; the deep members wait until the shallow ones had their chance.

For the first 200 executions the cycle is PCT depth 3, random walk, PCT depth 2 twice,
random walk, DPOR (``dpor.py``); then the cycle above with DPOR added, and PCT ``aside``.
Measured on the SCTBench ports (300 executions, 3 seeds; DPOR seedless) DPOR alone is
best or near it where a bug needs one order of few conflicting steps (``bluetooth_driver_bad``
6, ``deadlock01_bad`` 6, ``account_bad`` 7, ``twostage_bad`` 5) but slow on the
``reorder`` family, whose writers all conflict (17 on ``reorder_3_bad``, PCT depth 2 12),
and the shares were set by replaying the single members' figures through candidate
cycles: more DPOR raised the summed cost. After 200 executions DPOR keeps one turn per
cycle: where points do not say what they touch it is a plain exhaustive search, and a
long spinning execution gives it more orders than any budget. It leaves the cycle once
its search is complete.
"""


LEAD = 10
"""Executions DPOR runs alone first for a tracker that declares what its steps touch."""

PLAIN_LEAD = 40
"""Executions in which DPOR and random walk take turns first on plain code, whose steps say
what they touch."""


def led_by(mix: Mix, lead: int, members: tuple[StrategySpec, ...] = (DPOR,)) -> Mix:
    """``mix`` after ``lead`` executions in which only ``members`` take turns, in that order
    (the stages of ``mix`` start ``lead`` later)."""
    cycle = tuple(mix.members.index(member) for member in members)
    return Mix(mix.members, (Stage(0, cycle),
                             *(Stage(stage.start + lead, stage.cycle) for stage in mix.stages)))


DECLARED_MIX = led_by(DEFAULT_MIX, LEAD)
"""The default for a tracker whose words declare what each step reads and writes
(``Words.accesses``): DPOR runs the first ``LEAD`` executions alone, then the cycle above.
Plain code's default is ``PLAIN_MIX``; ``DEFAULT_MIX`` is a tracker's that declares nothing.

Where every step is declared, DPOR's first executions reverse exactly the races they
saw, and the races of a tracker's operations are few: on the DRA tracker's seed race DPOR
needs a median of 9 executions (random walk 24, PCT depth 3 20), which the default's
one turn in six would stretch to about 25. A longer lead would cost the racy variants
DPOR does not find at once (``events-unordered`` needs more preemptions than its first
passes make) as many executions.
"""


PLAIN_MIX = led_by(DEFAULT_MIX, PLAIN_LEAD, (RW, DPOR))
"""Plain code's default: random walk and DPOR take turns for the first ``PLAIN_LEAD``
executions (random walk first), then the cycle of ``DEFAULT_MIX``.

Plain code records what each step read and wrote, with the values, so DPOR's search is
exact there, and on the SCTBench ports DPOR alone has the smallest sum of medians of every
single strategy (144 executions over 26 programs, 300 executions per trial). Its misses are
bugs that need one preemption anywhere, which random walk hits in one to three executions
while DPOR walks its preemptions from the first step on (``queue_bad``: DPOR 61, random
walk 1; ``circular_buffer_bad`` 17 and 1; ``carter01_bad`` 5 and 1). Alternating the two
costs each program at most about twice the better one's executions, where a lead of DPOR
alone (40 executions, the mix before this one) cost ``queue_bad`` 41 executions against
random walk's 1, and no fixed cycle of more members could stay within three times the
best member everywhere when the best members differ ten- to sixty-fold from program to
program. Random walk goes first: where it is the best member and needs one execution, the
default may need at most three, and random walk's first two turns fall within them;
DPOR's first turn (the schedule without preemptions, which finds the twelve programs
every strategy finds at once) still comes second. The default's sum of medians against
every single strategy's, and its ratio to the best one per program, are on the
documentation's SCTBench figures page (docs/figures-sctbench.md, written by ``shmstress
bench --suite sctbench --markdown``).
The cycle after the lead keeps PCT's depths for bugs that neither reaches in budget.
"""


def mix_words(mix: Mix) -> str:
    """Who takes turns in ``mix`` and from which execution on, read from the mix itself,
    so that ``--help`` says what runs: ``random walk and dpor take turns; from execution
    41 on, pct depth 3 and pct depth 2 join them; ...``."""
    parts: list[str] = []
    before: list[str] = []
    for stage in mix.stages:
        names = list(dict.fromkeys(mix.members[i].short() for i in stage.cycle))
        if not before:
            parts.append(f"{_listed(names)} take turns" if len(names) > 1
                         else f"{names[0]} alone")
        else:
            joined = [name for name in names if name not in before]
            left = [name for name in before if name not in names]
            said = [f"{_listed(joined)} join{'s' if len(joined) == 1 else ''}"] if joined else []
            said += [f"{_listed(left)} leave{'s' if len(left) == 1 else ''}"] if left else []
            parts.append(f"from execution {stage.start + 1:,} on, " + " and ".join(said))
        before = names
    return "; ".join(parts)


def _listed(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


MIXES: dict[str, Mix] = {"undeclared": DEFAULT_MIX, "declared": DECLARED_MIX,
                         "plain": PLAIN_MIX}
"""The mix by what the steps say they touch: a tracker's words declare nothing, or
declare it (``Words.accesses``), or the code is plain."""


@dataclass(frozen=True)
class PortfolioSpec(StrategySpec):
    """The portfolio; a bundle's names the member that ran the failing execution."""

    name = "portfolio"
    searches = True
    member: str = ""  # described, with the execution: ``pct depth 3 at execution 7``

    def describe(self) -> str:
        return f"portfolio ({self.member})" if self.member else "portfolio"

    def build(self, seed: int, space: SearchSpace) -> Strategy:
        as_member = replace(space, member=True)
        return Portfolio(seed, lambda spec, member_seed: spec.build(member_seed, as_member),
                         MIXES[space.footprints])


class Portfolio:
    def __init__(self, seed: int, build: Build, mix: Mix = DEFAULT_MIX) -> None:
        self._mix = mix
        self._members: list[Strategy] = [
            build(spec, seed if spec == RW else
                  seeded_rng(seed, f"portfolio:{index}:{spec.describe()}").getrandbits(63))
            for index, spec in enumerate(mix.members)
        ]
        self._done: set[int] = set()  # members with nothing left to try
        self._execution = -1
        self._active = 0
        self.turns: Counter[int] = Counter()  # member index -> executions it ran
        self.spec = PortfolioSpec()

    @property
    def active(self) -> Strategy:
        """The member that runs the current execution."""
        return self._members[self._active]

    @property
    def members(self) -> Sequence[Strategy]:
        return tuple(self._members)

    def member_of(self, execution: int) -> int:
        """The member whose turn execution ``execution`` (0-based) is, ignoring members
        that ran out."""
        cycle = self._mix.stage(execution).cycle
        return cycle[execution % len(cycle)]

    def found_by(self) -> StrategySpec:
        """The spec naming the member of the current execution and the execution (1-based),
        as a bundle stores it: ``portfolio (random walk at execution 7)``."""
        return PortfolioSpec(member=f"{self.active.spec.short()} at "
                                    f"execution {self._execution + 1}")

    def new_execution(self) -> bool:
        self._execution += 1
        execution = self._execution
        stages = self._mix.stages
        current = stages.index(self._mix.stage(execution))
        # a stage whose members all ran out (DPOR's lead, its search complete) hands
        # its turns to the next stage's cycle
        for stage in stages[current:]:
            cycle = stage.cycle
            for offset in range(len(cycle)):
                member = cycle[(execution + offset) % len(cycle)]
                if member in self._done:
                    continue
                if self._members[member].new_execution():
                    self._active = member
                    self.turns[member] += 1
                    return True
                self._done.add(member)
        return False

    def next_task(self, view: SchedulerView) -> tuple[int, int]:
        return self._members[self._active].next_task(view)

    def next_u64(self) -> int:
        return self._members[self._active].next_u64()

    def ran(self) -> tuple[StrategySpec, ...]:
        """The members that ran at least one execution, in the mix's order."""
        return tuple(spec for index, spec in enumerate(self._mix.members) if self.turns[index])

    def coverage(self) -> tuple[tuple[str, int], ...]:
        """(member, executions it ran), in the mix's order, members that never ran left out."""
        mix = self._mix
        return tuple((mix.members[index].short(), self.turns[index])
                     for index in range(len(mix.members)) if self.turns[index])
