"""The ported SCTBench programs: where each scenario lives and how it may fail.

A buggy program's failure is expected to be its assert (``failed``) or, for
the programs whose bug is a wait nobody ends, ``deadlock`` (a cycle of lock
holders) or ``no-progress`` (a wait that no process left can end: a lost
signal, a lock held by a thread that finished). A twin (``_ok``, ``_unsat``)
must run clean, except the ``din_phil*_unsat`` twins, which keep the circular
wait of their ``_sat`` programs and may deadlock (never fail an assert).

Thread counts are SCTBench's (``benchmarks/buggy.txt``), main included: the
ports start the same number of processes.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from shmstress.plain.outcome import PlainEnd
from shmstress.plain.scenario import ScenarioRef
from shmstress.plain.spec import PlainSpec

PACKAGE = "shmstress.bench.sctbench"
ASSERT = (PlainEnd.FAILED.value,)
WAITS = (PlainEnd.DEADLOCK.value, PlainEnd.NO_PROGRESS.value)
CLEAN = ()
_MIN_SLOTS = 16  # PlainSpec's default board


@dataclass(frozen=True)
class Program:
    """One scenario of the suite: a buggy program or a twin."""

    name: str  # SCTBench's, and the scenario function's
    module: str  # under PACKAGE
    threads: int  # SCTBench's count, main included
    fails_as: tuple[str, ...]  # the PlainEnd values a failure of it may end as
    twins: tuple[str, ...] = ()

    @property
    def ref(self) -> ScenarioRef:
        return ScenarioRef(f"{PACKAGE}.{self.module}", self.name)

    def spec(self) -> PlainSpec:
        """The session: a board with a slot for every process (fsbench starts 28)."""
        return PlainSpec(self.ref, max_processes=max(_MIN_SLOTS, self.threads + 4))

    def expected(self, end: str) -> bool:
        return end in self.fails_as


def _din_phil(n: int) -> tuple[Program, Program]:
    sat = Program(f"din_phil{n}_sat", "din_phil", n + 1, ASSERT + WAITS,
                  (f"din_phil{n}_unsat",))
    unsat = Program(f"din_phil{n}_unsat", "din_phil", n + 1, WAITS)
    return sat, unsat


_DIN_PHIL = tuple(program for n in range(2, 8) for program in _din_phil(n))

BUGGY: tuple[Program, ...] = (
    Program("account_bad", "account", 4, ASSERT),
    Program("arithmetic_prog_bad", "arithmetic_prog", 3, ASSERT, ("arithmetic_prog_ok",)),
    Program("bluetooth_driver_bad", "bluetooth_driver", 2, ASSERT),
    Program("carter01_bad", "carter01", 5, WAITS),
    Program("circular_buffer_bad", "circular_buffer", 3, ASSERT),
    Program("deadlock01_bad", "deadlock01", 3, WAITS),
    *(p for p in _DIN_PHIL if p.name.endswith("_sat")),
    Program("fsbench_bad", "fsbench", 28, ASSERT, ("fsbench_ok",)),
    Program("lazy01_bad", "lazy01", 4, ASSERT),
    Program("phase01_bad", "phase01", 3, WAITS),
    Program("queue_bad", "queue_", 3, ASSERT, ("queue_ok",)),
    Program("reorder_3_bad", "reorder", 4, ASSERT),
    Program("reorder_4_bad", "reorder", 5, ASSERT),
    Program("reorder_5_bad", "reorder", 6, ASSERT),
    Program("reorder_10_bad", "reorder", 11, ASSERT),
    Program("stack_bad", "stack", 3, ASSERT, ("stack_ok",)),
    Program("sync01_bad", "sync", 3, WAITS, ("sync01_ok",)),
    Program("sync02_bad", "sync", 3, WAITS, ("sync02_ok",)),
    Program("token_ring_bad", "token_ring", 5, ASSERT),
    Program("twostage_bad", "twostage", 3, ASSERT),
    Program("wronglock_bad", "wronglock", 9, ASSERT),
)
"""The buggy programs, in SCTBench's alphabetical order."""

TWINS: tuple[Program, ...] = (
    Program("arithmetic_prog_ok", "arithmetic_prog", 3, CLEAN),
    *(p for p in _DIN_PHIL if p.name.endswith("_unsat")),
    Program("fsbench_ok", "fsbench", 27, CLEAN),
    Program("queue_ok", "queue_", 3, CLEAN),
    Program("stack_ok", "stack", 3, CLEAN),
    Program("sync01_ok", "sync", 3, CLEAN),
    Program("sync02_ok", "sync", 3, CLEAN),
)
"""The ``_ok``/``_unsat`` twins SCTBench has for the buggy programs above."""

_BY_NAME = MappingProxyType({program.name: program for program in (*BUGGY, *TWINS)})


def program(name: str) -> Program:
    """A buggy program or a twin by its SCTBench name (KeyError if there is none)."""
    return _BY_NAME[name]
