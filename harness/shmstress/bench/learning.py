"""The learning section of ``shmstress bench``: does a run that starts from saved learning
find its first violation sooner than the run that saved it?

Each trial gets a database of its own (a fresh temporary directory) and runs one seed
three times with aimed noise: a *first* run (nothing learnt: it saves what it learnt),
a *second* run (starts from it) and, once the directory is deleted, a run *after
delete*, which must start fresh again (it loads no pair: the figure says so). The
same seed keeps the roles' own draws alike, so what differs is the learning (and the
machine's timing, which no seed fixes). Medians over the trials, missed trials
counted as the budget, from run start and from the end of the start-up transient,
whose forks and imports learning cannot shorten.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from shmstress.core.config import RunConfig
from shmstress.core.noise import AIMED, NoiseConfig
from shmstress.core.result import RunResult
from shmstress.free.learning import Learning
from shmstress.free.runner import run

PHASES = ("first run", "second run", "after delete")


@dataclass(frozen=True)
class Phase:
    """The runs of one phase over every trial of one variant."""

    name: str
    times_s: tuple[float | None, ...]  # per trial, from run start (None: not found)
    after_startup_s: tuple[float | None, ...]
    learnt_pairs: tuple[int, ...]  # pairs each run started from

    def median(self, budget_s: float, past_startup: bool = False) -> float:
        times = self.after_startup_s if past_startup else self.times_s
        return statistics.median(budget_s if t is None else t for t in times)

    @property
    def found(self) -> int:
        return sum(t is not None for t in self.times_s)


@dataclass(frozen=True)
class LearningBench:
    variant: str
    trials: int
    budget_s: float
    noise: float
    phases: tuple[Phase, ...]  # in the order of PHASES


def run_learning_bench(
    variants: Sequence[str], trials: int, budget_s: float, noise: float, seed: int,
    log: Callable[[str], None],
) -> list[LearningBench]:
    """The three phases of every variant of the DRA tracker (see the module's docstring)."""
    benches = []
    for variant in variants:
        log(f"learning: {variant}, {trials} trials of a first run, a second run and a run "
            "after delete")
        runs: list[list[RunResult]] = [[], [], []]
        for trial in range(trials):
            config = RunConfig(tracker="dra", variant=variant, seed=seed + trial,
                               duration=budget_s, noise=NoiseConfig(noise, policy=AIMED))
            scratch = Path(tempfile.mkdtemp(prefix="shmstress-learning-"))
            try:
                learning = Learning(scratch / "database")
                runs[0].append(run(config, learning=learning))
                runs[1].append(run(config, learning=learning))
                shutil.rmtree(learning.directory)
                runs[2].append(run(config, learning=learning))
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
        benches.append(LearningBench(variant, trials, budget_s, noise, tuple(
            _phase(name, results) for name, results in zip(PHASES, runs, strict=True))))
    return benches


def _phase(name: str, results: list[RunResult]) -> Phase:
    times = []
    for result in results:
        first = result.principal_violation
        times.append(first.elapsed_s if first is not None else None)
    return Phase(
        name,
        tuple(times),
        tuple(r.first_after_startup_s if t is not None else None
              for r, t in zip(results, times, strict=True)),
        tuple(r.aim.learnt_pairs if r.aim is not None else 0 for r in results),
    )


def render_learning_bench(benches: Sequence[LearningBench]) -> list[str]:
    if not benches:
        return []
    first = benches[0]
    lines = [
        f"learning that persists (aimed noise p={first.noise:g}; {first.trials} trials per "
        "variant, each with a database of its own; the same seed in every phase; median time "
        "to first violation, missed trials counted as the budget):",
        f"  {'variant':18} {'phase':13} {'found':>7} {'from start':>11} {'past start-up':>14} "
        f"{'learnt pairs':>13}",
    ]
    for bench in benches:
        for phase in bench.phases:
            pairs = statistics.median(phase.learnt_pairs)
            lines.append(
                f"  {bench.variant:18} {phase.name:13} {phase.found:>3}/{bench.trials:<3} "
                f"{phase.median(bench.budget_s):>10.3f}s "
                f"{phase.median(bench.budget_s, past_startup=True):>13.3f}s {pairs:>13g}")
    lines.append("  speed-up of the second run over the first (ratio of medians; > 1: "
                 "learning helped):")
    for bench in benches:
        one, two, _ = bench.phases
        ratios = [
            _ratio(one.median(bench.budget_s, past), two.median(bench.budget_s, past))
            for past in (False, True)
        ]
        lines.append(f"  {bench.variant:18} from start {ratios[0]:.2f}x, past start-up "
                     f"{ratios[1]:.2f}x")
    return lines


def _ratio(before: float, after: float) -> float:
    return before / after if after > 0 else float("inf")
