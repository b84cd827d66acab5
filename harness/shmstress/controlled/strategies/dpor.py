"""DPOR: bounded exhaustive search that explores only the orders of steps that conflict.

Two steps of different workers that touch nothing in common commute, so two
schedules that differ only in the order of such steps reach the same state;
exhaustive search (``exhaustive.py``) runs both, dynamic partial-order reduction
runs one. The algorithm is source-DPOR (Abdulla, Aronis, Jonsson, Sagonas,
"Optimal Dynamic Partial Order Reduction", POPL 2014, its Algorithm 1) with
sleep sets, fitted to the prefix-replay design of ``exhaustive.py``: an
execution replays the prefix of an earlier one up to the step being varied,
takes the new choice there, and then runs the schedule without preemptions.

Order. Every untried choice is kept with its prefix, and the one at the earliest
step goes first (not the latest, as a depth-first search would take it): a race
early in an execution is reversed before the orders of its tail are, which is
where a tracker's waiting roles race at every spin. On the DRA tracker's seed
race (scenario ``seed-race``, at most one preemption) this takes the median of
10 seeds from 39 executions to 9; the choices tried stay the same set.

The strategy sees what a step touched only after the execution, when the
session calls ``observe`` with one ``core.access.Footprint`` per step (the
``Observing`` protocol); undeclared accesses conflict with everything, so a
session that tells nothing makes this an exhaustive search without bound. From
the footprints it builds happens-before with vector clocks (program order plus
every pair of conflicting steps) and finds each *race*: two conflicting steps
of different workers, the first not ordered before the second through any other
step. For a race (i, j) the reversal needs some worker that can start the steps
not after i followed by j (the race's *initials*) to go first at step i; if no
such worker is already among the choices there, one is added: j's own worker where it
is an initial, since it reverses the race at once, where another initial may need
further preemptions to get there, which a pass of a low bound cuts (on SCTBench's
``reorder_10_bad`` the first initial in step order was the next writer, not the
checker, and DPOR missed the bug within 300 executions; with the checker first its
pass of one preemption finds it).
A race whose second worker could not go at step i and was let go by i itself (a join
waiting for the exit i wrote, a child waiting for its start) cannot be reversed and is
not followed (``_Trace.waits_for``): such races put every other runnable worker at the
step of every start and every exit. The search ends
when no step has a choice left to try: then every order of conflicting steps has
been run (within the bound), and the session may say the search was complete.

Sleep sets are applied after the execution too: a worker already explored at a
step whose next step commutes with what was taken stays asleep below it; an
execution that takes a sleeping worker repeats a schedule already run, and its
races past that step are not followed (Algorithm 1 would not have run it; here it
costs one execution and no more). While an execution runs, the schedule past the
varied step prefers, when the running worker blocks or finishes, a worker that
was not explored at the varied step, which avoids most such repeats.

Iterative bounding. Schedules with few preemptions find most bugs (the
reason for CHESS's preemption bound), and a depth-first search without a
bound can spend its whole budget deep in one subtree. So the search runs in
passes: the first allows no preemption, each next pass one more, and a pass
tries the choices the one before it cut for its bound, each on the prefix it was
found on (no execution of an earlier pass is run again). A pass in which the
bound left no choice out is complete, and so is the search.

Bounds. A worker that spins (re-reads a flag, yields, reads again) races with
the write it waits for at every read, and each race is a new order to try; the
number of schedules then grows with the spin's length. Two bounds keep the search
finite and cheap: passes up to at most ``bound`` preemptions per execution, counted as
``exhaustive.py`` counts them (switching away from a worker that could go on, or
handing over out of turn after a yield), with ``None`` for no bound; and races
are sought only among the first ``horizon`` steps of an execution. Preemption
bounding makes the reduction incomplete in theory (Coons, Musuvathi, McKinley,
"Bounded partial-order reduction", OOPSLA 2013 add further choices to repair it);
here a bounded search is a heuristic, as the bounded exhaustive search is.

Frontier. Every untried choice keeps the execution it was found in (its prefix
is what a later execution replays), and on a program whose search cannot end (a
tracker whose workers spin for thousands of steps) each execution finds more
choices than it uses: a portfolio's DPOR member grew its coordinator by about 60 KB
an execution, without end. So a search may be given a budget of steps kept
(``kept_steps``): an execution whose untried choices would keep more steps than it
allows keeps none of them (they are counted in ``stats.dropped``, and a later
execution that reaches the same step files them again). Such a search is no longer
complete, so only the portfolio's member has a budget (``MEMBER_KEPT_STEPS``): a
portfolio never runs out (random walk is one of its members), so no run claims a
complete search on its account. ``--strategy dpor`` has none: a complete search needs
its whole frontier. A choice cut for a pass's bound is kept once, however many
executions find it again.

Executions must be deterministic for the prefix replay to hold, so every
execution uses the same worker seed. Frontrun (MPL-2.0) has a DPOR engine for
threads written in Rust; nothing of it is used here, only the published algorithm.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field

from shmstress.controlled.strategies.base import (
    UNBOUNDED,
    SchedulerView,
    SearchSpace,
    Strategy,
    StrategySpec,
    default_choice,
    require,
    seeded_rng,
)
from shmstress.core.access import EVERY, LOCK, Access, Footprint, conflicting
from shmstress.core.plurals import counted

Accesses = tuple[Access, ...] | None

DPOR_BOUND = UNBOUNDED
"""``--strategy dpor``'s preemption bound when none is given (``base.UNBOUNDED``: none)."""


@dataclass(frozen=True)
class DporSpec(StrategySpec):
    """DPOR, with its preemption bound (``UNBOUNDED``: none)."""

    name = "dpor"
    searches = True
    seedless = True
    flags = ("bound",)
    bound: int = DPOR_BOUND

    def __post_init__(self) -> None:
        require("bound", self.bound, UNBOUNDED, f" (or {UNBOUNDED}: none)")

    def describe(self) -> str:
        limit = ("no preemption bound" if self.bound == UNBOUNDED
                 else f"at most {counted(self.bound, 'preemption')}")
        return f"dpor (partial-order reduced search, {limit})"

    def short(self) -> str:
        return "dpor" if self.bound == UNBOUNDED else f"dpor bound {self.bound}"

    def build(self, seed: int, space: SearchSpace) -> Strategy:
        return Dpor(seed, None if self.bound == UNBOUNDED else self.bound,
                    kept_steps=MEMBER_KEPT_STEPS if space.member else None)


DEFAULT_HORIZON = 2000
"""Races are sought among this many first steps of an execution (see the docstring)."""
WIDE_RACE = 400
"""A race whose steps lie further apart than this takes the conservative choice (the
second step's worker, or every worker that could run) instead of computing its initials."""
MEMBER_KEPT_STEPS = 10_000
"""The steps of prefixes a portfolio's DPOR member keeps for its untried choices (about
300 bytes each): a few megabytes, reached in a minute on the DRA tracker, never within
the few hundred executions of an SCTBench program."""


_NOBODY: dict[int, Accesses] = {}
"""The sleep set of nearly every step (never changed: a step's own set is made anew)."""


@dataclass(slots=True)
class _Choice:
    """One step of the current execution at which the strategy chose among runnable workers.

    A search keeps one per step of every execution a pending choice was found in: hundreds
    of thousands on a program whose workers spin. So it is slotted, and what most steps
    share is shared: the runnable sets (a few distinct tuples), no choice left to try (the
    empty frozenset, one object), an empty sleep set (``_NOBODY``).
    """

    enabled: tuple[int, ...]
    chosen: int
    default: int  # the choice without preemption here
    spent: int  # preemptions spent before this step
    costly: bool  # the previous worker is runnable: any choice but the default costs one
    backtrack: frozenset[int] = frozenset()  # choices to try here (few steps have any)
    done: dict[int, Accesses] = field(default_factory=dict)  # tried -> what its step touched
    sleep: dict[int, Accesses] | None = None  # asleep on arriving here (None: not computed)
    filed: frozenset[int] = frozenset()  # choices here filed to be tried (each once)
    deferred: frozenset[int] = frozenset()  # choices here kept for a later pass (each once)

    def cost(self, worker: int) -> int:
        return int(self.costly and worker != self.default)


@dataclass
class DporStats:
    """What the search did, for coverage lines and for measuring it."""

    races: int = 0
    added: int = 0  # backtrack choices added
    pruned: int = 0  # choices the preemption bound kept out
    redundant: int = 0  # executions that took a sleeping worker (a repeat)
    unobserved: int = 0  # executions no footprints came for (taken as all-conflicting)
    dropped: int = 0  # untried choices not kept: over the budget of steps kept


@dataclass(slots=True)
class _Kept:
    """An execution that untried choices were found in, as each of them keeps it: its
    choices and the worker taken at each (later executions change ``chosen`` on the prefix
    they share), cut after the deepest; ``holders``: the choices filed or deferred from it."""

    trail: list[_Choice | None]
    taken: list[int]
    holders: int = 0


class Dpor:
    finished = False  # ``base.Bounded``: set once no choice is left (a class default, so a
    # checkpoint pickled before it existed still loads)

    def __init__(self, seed: int, bound: int | None = None, horizon: int = DEFAULT_HORIZON,
                 execution_seed: int | None = None, kept_steps: int | None = None) -> None:
        if bound is not None and bound < 0:
            raise ValueError("the preemption bound must be >= 0 (None: no bound)")
        self.spec = DporSpec(bound=UNBOUNDED if bound is None else bound)
        self._bound = bound
        self._level = 0  # the bound of the current pass (iterative bounding)
        self._cut = False  # the current pass left out a choice over its bound
        self._horizon = horizon
        self._seed = (seeded_rng(seed, "dpor").getrandbits(64) if execution_seed is None
                      else execution_seed)
        self._trail: list[_Choice | None] = []  # by step; None: no choice was made there
        self._replay = 0  # steps of the prefix replayed from the previous execution
        self._avoid: frozenset[int] = frozenset()  # explored at the varied step
        self._observed = True
        self._started = False
        # untried choices, the earliest step first: (step, filing order, the execution it
        # was found in, the worker to try); each filed once (``_Choice.filed``). The
        # execution's lists are its own, shared by every choice filed from it (a copy of
        # the prefix per choice grew by megabytes an execution where a spinning worker
        # races at every step), cut after the deepest step filed (``_share``).
        self._pending: list[tuple[int, int, _Kept, int]] = []
        # choices a pass cut for its bound: (step, the execution, the worker cut), tried
        # when the next pass allows them; each kept once (``_Choice.deferred``)
        self._deferred: list[tuple[int, _Kept, int]] = []
        self._cut_now: list[tuple[int, int]] = []  # (step, worker) cut in this execution
        self._filings = 0  # untried choices filed so far: their order (an int pickles)
        self._current: _Kept | None = None  # ``_trail`` as its untried choices keep it
        self._kept_steps = kept_steps  # the budget of steps kept (None: no budget)
        self._steps_kept = 0  # steps of the executions untried choices keep now
        self._runnables: dict[tuple[int, ...], tuple[int, ...]] = {}  # shared by the choices
        self._accesses: dict[tuple[object, ...], tuple[Access, ...]] = {}  # ``_interned``
        self.stats = DporStats()

    def _file(self) -> int:
        """The filing order of the next untried choice (ties on a step go first-filed first).
        A plain count rather than ``itertools.count``, which no longer pickles from Python
        3.14 on: a checkpoint pickles the whole search (``plain/checkpoint.py``)."""
        self._filings += 1
        return self._filings - 1

    # -- the Strategy protocol ----------------------------------------------------------
    def new_execution(self) -> bool:
        if not self._started:
            self._started = True
            self._observed = False
            return True
        if not self._observed:  # nobody said what the steps touched: all conflict
            self.stats.unobserved += 1
            taken = []
            for choice in self._trail:
                if choice is None:
                    break
                taken.append(Footprint(choice.chosen, None))
            self.observe(taken)
        self._file_pending()
        while True:
            while self._pending:
                index, _, kept, chosen = heapq.heappop(self._pending)
                self._let_go(kept)
                prefix, took = kept.trail, kept.taken
                choice = prefix[index]
                assert choice is not None
                if chosen in choice.done:
                    continue
                for step in range(index + 1):
                    on_prefix = prefix[step]
                    if on_prefix is not None:
                        on_prefix.chosen = took[step]
                choice.chosen = chosen
                self._trail = prefix[:index + 1]
                self._current = None
                self._replay = index + 1
                self._avoid = frozenset(choice.done)
                self._observed = False
                return True
            if not self._next_level():
                self._trail = []
                self._current = None
                self.finished = True
                return False

    def untried(self) -> int:
        """Choices found and not tried yet (``base.Bounded``): those filed, those the execution
        just run found (filed at the next ``new_execution``), and, when the bound allows
        another pass, those a pass cut for its bound (each runs in the next pass). Each is one
        execution more; choices dropped over ``kept_steps`` are not counted (a lower bound)."""
        if self.finished:
            return 0
        found = 0
        if self._current is None:  # the execution just run: its choices are not filed yet
            found = sum(len(choice.backtrack - choice.done.keys() - choice.filed)
                        for choice in self._trail if choice is not None)
        later = 0
        if self._bound is None or self._level < self._bound:
            later = len(self._deferred) + len(set(self._cut_now))
        return len(self._pending) + found + later

    def _next_level(self) -> bool:
        """The next pass (one preemption more): the choices the last pass cut, where they were
        found, become choices to try; False once none was cut or the bound is reached."""
        while self._cut and (self._bound is None or self._level < self._bound):
            self._level += 1
            self._cut = False
            deferred, self._deferred = self._deferred, []
            for entry in deferred:
                index, kept, worker = entry
                choice = kept.trail[index]
                assert choice is not None
                if worker in choice.done or worker in choice.backtrack:
                    self._let_go(kept)
                    continue
                if choice.spent + choice.cost(worker) > self._level:
                    self._deferred.append(entry)
                    self._cut = True
                    continue
                choice.backtrack |= {worker}
                choice.filed |= {worker}
                heapq.heappush(self._pending, (index, self._file(), kept, worker))
            if self._pending:
                return True
        return False

    def _file_pending(self) -> None:
        """File every untried choice of the execution just run with its prefix (the choices
        up to it, shared with every execution that took the same prefix, and the worker taken
        at each), so that trying one does not drop the others further down; keep the
        choices its races cut for a later pass. None of them if keeping the execution
        would pass the budget of steps kept."""
        kept = self._share()
        trail = kept.trail
        filed = [(index, chosen) for index, choice in enumerate(trail) if choice is not None
                 for chosen in sorted(choice.backtrack - choice.done.keys() - choice.filed)]
        cut, self._cut_now = list(dict.fromkeys(self._cut_now)), []
        if not filed and not cut:
            return
        deepest = max(index for index, _ in filed + cut)
        del trail[deepest + 1:]  # no choice filed from it looks further
        del kept.taken[deepest + 1:]
        if self._kept_steps is not None and self._steps_kept + len(trail) > self._kept_steps:
            self.stats.dropped += len(filed) + len(cut)
            return
        self._steps_kept += len(trail)
        kept.holders = len(filed) + len(cut)
        for index, chosen in filed:
            choice = trail[index]
            assert choice is not None
            choice.filed |= {chosen}
            heapq.heappush(self._pending, (index, self._file(), kept, chosen))
        for index, worker in cut:
            choice = trail[index]
            assert choice is not None
            choice.deferred |= {worker}
            self._deferred.append((index, kept, worker))

    def _share(self) -> _Kept:
        """The execution just run, as every choice filed from it keeps it."""
        if self._current is None:
            self._current = _Kept(self._trail, [choice.chosen if choice is not None else -1
                                                for choice in self._trail])
        return self._current

    def _let_go(self, kept: _Kept) -> None:
        """One choice filed or deferred from ``kept`` is taken or dropped: once none is
        left, its steps no longer count against the budget."""
        kept.holders -= 1
        if not kept.holders:
            self._steps_kept -= len(kept.trail)

    def next_task(self, view: SchedulerView) -> tuple[int, int]:
        step = view.step
        trail = self._trail
        if step < self._replay and step < len(trail):
            choice = trail[step]
            if choice is not None and choice.chosen in view.runnable:
                return choice.chosen, 1
            del trail[step:]  # the execution left its prefix: not deterministic
            self._replay = step
        while len(trail) < step:
            trail.append(None)  # steps taken without asking (a lease, a script)
        runnable = tuple(view.runnable)
        runnable = self._runnables.setdefault(runnable, runnable)  # one tuple per set
        default = default_choice(view)
        chosen = default
        if (self._avoid and default in self._avoid and view.current not in runnable):
            chosen = next((w for w in runnable if w not in self._avoid), default)
        previous = self._last_node(step)
        spent = 0 if previous is None else previous.spent + previous.cost(previous.chosen)
        trail.append(_Choice(runnable, chosen, default, spent, view.current in runnable))
        return chosen, 1

    def next_u64(self) -> int:
        return self._seed

    def _last_node(self, step: int) -> _Choice | None:
        for index in range(min(step, len(self._trail)) - 1, -1, -1):
            choice = self._trail[index]
            if choice is not None:
                return choice
        return None

    # -- Observing: learn the races of the execution just run ---------------------------
    def observe(self, footprints: Sequence[Footprint]) -> None:
        self._observed = True
        trail = self._trail
        steps = min(len(footprints), len(trail))
        for index in range(steps):
            choice = trail[index]
            if choice is not None and footprints[index].worker == choice.chosen:
                choice.done[choice.chosen] = self._interned(footprints[index].accesses)
        blocked = self._sleep_sets(footprints, steps)
        if blocked < len(footprints):  # Algorithm 1 would have taken a worker awake here
            self.stats.redundant += 1
            choice = trail[blocked]
            assert choice is not None
            awake = [w for w in choice.enabled if w not in (choice.sleep or {})]
            self._add(choice, awake, first_only=True)
        limit = min(len(footprints), self._horizon, blocked)
        trace = _Trace(footprints[:limit])
        for i, j in trace.races():
            self.stats.races += 1
            if i < len(trail):
                self._reverse(trace, i, j)

    def _interned(self, accesses: Accesses) -> Accesses:
        """One tuple for all the steps that touched alike (most steps repeat one of a few):
        the choices keep them. Alike means the same types too: 1, 1.0 and True are equal
        values, but writes of them do not commute (``access.conflicting``)."""
        if accesses is None:
            return None
        try:
            key = tuple((a.kind, a.id, a.write, type(a.value), a.value) for a in accesses)
            return self._accesses.setdefault(key, accesses)
        except TypeError:  # a value that does not hash: kept as it is
            return accesses

    def _sleep_sets(self, footprints: Sequence[Footprint], steps: int) -> int:
        """Give each step its sleep set on arrival (kept for the replayed prefix, whose steps
        did not change); returns the first step that takes a sleeping worker, or
        ``len(footprints)`` when none does."""
        trail = self._trail
        asleep: dict[int, Accesses] = {}
        for index in range(steps):
            choice = trail[index]
            taken = footprints[index].accesses
            if choice is None:
                asleep = {w: a for w, a in asleep.items() if not conflicting(a, taken)}
                continue
            if choice.sleep is None:
                choice.sleep = asleep or _NOBODY
            if choice.chosen in choice.sleep:
                return index
            here = {**choice.sleep, **{w: a for w, a in choice.done.items() if w != choice.chosen}}
            asleep = {w: a for w, a in here.items() if not conflicting(a, taken)}
        return len(footprints)

    def _reverse(self, trace: _Trace, i: int, j: int) -> None:
        """Make sure some worker that can reverse race (i, j) is tried at step i."""
        choice = self._trail[i]
        if choice is None:
            return
        enabled = choice.enabled
        second = trace.workers[j]
        if second in enabled and (second in choice.backtrack or second in choice.done):
            return  # j's worker goes first at i in some execution (Flanagan and Godefroid)
        if second not in enabled and trace.waits_for(i, j):
            return  # j's worker could go on only once i was done (a join, a start): no reversal
        initials = trace.initials(i, j) if j - i <= WIDE_RACE else []
        candidates = [w for w in initials if w in enabled]
        if second in candidates:  # the race's own worker first: it reverses the race directly
            candidates.remove(second)
            candidates.insert(0, second)
        if candidates:  # source-DPOR: one initial among the choices is enough
            if any(w in choice.backtrack or w in choice.done for w in candidates):
                return
            first_only = True
        elif initials:  # none can go at i: j waits for i (a lock, a join): not reversible
            return
        else:  # a wide race: Flanagan and Godefroid's rule
            candidates = [second] if second in enabled else list(enabled)
            first_only = False
        self._add(choice, candidates, first_only)

    def _add(self, choice: _Choice, candidates: Sequence[int], first_only: bool) -> None:
        """Add the candidates to the choices at ``choice`` (only the first that may go, with
        ``first_only``), leaving out those tried, asleep, or over the bound."""
        sleep = choice.sleep or {}
        cut: list[int] = []
        for worker in candidates:
            if worker in choice.backtrack or worker in choice.done or worker in sleep:
                continue
            if choice.spent + choice.cost(worker) > self._level:
                self.stats.pruned += 1
                self._cut = True
                cut.append(worker)
                continue
            choice.backtrack |= {worker}
            self.stats.added += 1
            if first_only:
                return
        if cut:  # kept for the next pass, with the execution they were found in
            index = next(at for at, c in enumerate(self._trail) if c is choice)
            for worker in cut[:1] if first_only else cut:
                if worker not in choice.deferred:
                    self._cut_now.append((index, worker))


class _Trace:
    """An execution's footprints with happens-before as vector clocks."""

    def __init__(self, footprints: Sequence[Footprint]) -> None:
        self.workers = [f.worker for f in footprints]
        self.accesses = [f.accesses for f in footprints]
        width = max(self.workers, default=-1) + 1
        self.width = width
        self.seq: list[int] = []  # 1-based index of each step among its worker's steps
        self.clocks: list[list[int]] = []
        self._candidates: list[list[int]] = []  # earlier conflicting steps that may race
        self._handovers: list[tuple[int, int]] = []  # (i, j): a lock taken by i, then by j
        holders: dict[int, list[int]] = {}  # lock -> the steps that touched it
        counts = [0] * width
        last: dict[int, int] = {}  # worker -> its latest step
        by_object: dict[tuple[str, int], list[int]] = {}
        by_kind: dict[str, list[int]] = {}
        undeclared: list[int] = []  # steps with undeclared accesses
        for index, (worker, accesses) in enumerate(zip(self.workers, self.accesses,
                                                       strict=True)):
            counts[worker] += 1
            self.seq.append(counts[worker])
            before = last.get(worker)
            clock = list(self.clocks[before]) if before is not None else [0] * width
            conflicts: set[int] = set()
            if accesses is None:
                conflicts.update(last.values())
            else:
                conflicts.update(undeclared[-1:])
                for access in accesses:
                    if access.id == EVERY:
                        conflicts.update(self._scan(by_kind.get(access.kind, ()), access, True))
                    else:
                        conflicts.update(self._scan(by_object.get((access.kind, access.id), ()),
                                                    access, False))
                        conflicts.update(self._scan(by_object.get((access.kind, EVERY), ()),
                                                    access, False))
            candidates = sorted(c for c in conflicts if self.workers[c] != worker)
            for other in candidates:
                _join(clock, self.clocks[other])
            clock[worker] = counts[worker]
            self.clocks.append(clock)
            self._candidates.append(candidates)
            last[worker] = index
            if accesses is None:
                undeclared.append(index)
            else:
                for access in accesses:
                    by_object.setdefault((access.kind, access.id), []).append(index)
                    by_kind.setdefault(access.kind, []).append(index)
                    if access.kind == LOCK and access.id != EVERY:
                        self._handover(holders.setdefault(access.id, []), index)

    def _scan(self, steps: Sequence[int], access: Access, whole_kind: bool) -> list[int]:
        """The steps of ``steps`` (those that touched one object, or for ``whole_kind`` any
        object of the kind, in order) that conflict with ``access`` and are not ordered
        before a later one that does: scanning back, up to the first step that writes what
        every earlier step touched (the object itself; for a whole kind, all of it). A write
        of a known value covers only what conflicts with it: an earlier write of the same
        value commutes with it, so it is not ordered before ``access`` through it and is
        still sought (every ``reorder`` setter's write races with the checker's read), up to
        a write of another value, which every earlier step conflicts with one way or the
        other."""
        out: list[int] = []
        cover: list[Access] = []  # the writes found so far that every earlier step is under
        seen: set[tuple[object, ...]] = set()  # ... one of each: a twin conflicts alike
        last: Access | None = None  # the latest of them, twin or not
        accesses = self.accesses
        for step in reversed(steps):
            theirs = accesses[step]
            assert theirs is not None
            for other in theirs:
                if cover and _under(other, cover):
                    continue  # ordered before a write that conflicts with ``access``
                if other.conflicts(access):
                    if step not in out:
                        out.append(step)
                    if other.write and (other.id == EVERY or not whole_kind):
                        last = other
                        _add_write(cover, seen, other)
            if last is not None and (last.value is None or _under(last, cover)):
                break  # every earlier step conflicts with one of these writes
        return out

    def _handover(self, steps: list[int], index: int) -> None:
        """A lock's acquire races with the previous holder's acquire, not its release: the
        release orders them, yet the other order is possible (the second worker taking the
        lock first). The previous holder's run of steps on the lock alternates acquire and
        release from its start; its last acquire is the one to race with."""
        workers = self.workers
        worker = workers[index]
        position = len(steps) - 1
        while position >= 0 and workers[steps[position]] == worker:
            position -= 1
        if position >= 0:
            holder, end = workers[steps[position]], position
            while position > 0 and workers[steps[position - 1]] == holder:
                position -= 1
            position += (end - position) // 2 * 2  # the block alternates acquire, release
            self._handovers.append((steps[position], index))
        steps.append(index)

    def hb(self, first: int, second: int) -> bool:
        """Step ``first`` happens before step ``second`` (or is it)."""
        return self.clocks[second][self.workers[first]] >= self.seq[first]

    def races(self) -> list[tuple[int, int]]:
        """Every (i, j): conflicting steps of different workers, i not ordered before j but
        through the conflict itself."""
        out = []
        previous: dict[int, int] = {}
        for j, candidates in enumerate(self._candidates):
            worker = self.workers[j]
            before = previous.get(worker)
            previous[worker] = j
            if not candidates:
                continue
            covered = list(self.clocks[before]) if before is not None else [0] * self.width
            for i in reversed(candidates):
                if covered[self.workers[i]] < self.seq[i]:
                    out.append((i, j))
                _join(covered, self.clocks[i])
        return out + self._handovers

    def waits_for(self, i: int, j: int) -> bool:
        """j's worker, which could not go on at step i (it waited, or was not started), was
        let go by step i itself: its first step after i conflicts with i and with no other
        worker's step in between. What a step waits for (a lock, an exit, a start) is among
        what it touches, and a step that touches none of it cannot end the wait, so no
        execution runs j's worker before i: the race cannot be reversed."""
        worker = self.workers[j]
        first = next(k for k in range(i + 1, j + 1) if self.workers[k] == worker)
        mine = self.accesses[first]
        if not conflicting(self.accesses[i], mine):
            return False
        return not any(self.workers[k] != worker and conflicting(self.accesses[k], mine)
                       for k in range(i + 1, first))

    def initials(self, i: int, j: int) -> list[int]:
        """The workers that can go first in the steps after i not ordered after it, then j:
        the workers whose first such step no other of those steps happens before."""
        steps = [k for k in range(i + 1, j) if not self.hb(i, k)]
        steps.append(j)
        first: dict[int, int] = {}
        for k in steps:
            first.setdefault(self.workers[k], k)
        out = []
        for worker, k in first.items():
            if all(not self.hb(other, k) for w, other in first.items()
                   if w != worker and other < k):
                out.append(worker)
        return out


def _under(access: Access, writes: Sequence[Access]) -> bool:
    """``access`` conflicts with one of ``writes`` (the scan's inner test: a loop, not
    ``any`` over a generator, which cost as much again as the tests themselves)."""
    for write in writes:  # noqa: SIM110 - see above
        if access.conflicts(write):
            return True
    return False


def _add_write(cover: list[Access], seen: set[tuple[object, ...]], write: Access) -> None:
    """Put ``write`` in ``cover`` unless a write of the same object and value (of the same
    type) is there: whether an access conflicts with a write depends on nothing else, so
    ``_under`` answers the same without it. A scan back over a counter that alternates
    between two values found every write of the first one, and tested each earlier step
    against all of them (quadratic in the steps on the object)."""
    value = write.value
    try:
        key = (write.kind, write.id, type(value), value)
        if key in seen:
            return
        seen.add(key)
    except TypeError:  # a value that cannot be hashed: kept, as before
        pass
    cover.append(write)


def _join(clock: list[int], other: list[int]) -> None:
    clock[:] = map(max, clock, other)
