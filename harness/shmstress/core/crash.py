"""An exception a role raises is a failure of the code under test, like a broken invariant.

A race can crash a worker as easily as it can break an invariant (a list emptied by
another process between a check and a ``pop``, a half-written record parsed). So the
worker sends a ``CrashReport`` and the coordinator turns it into a violation of the
pseudo-invariant ``crash`` (as a deadlock is reported under ``deadlock``): it gets a
bundle, and a replay reproduces it when the same worker raises at the same line.

Where in the order of points a crash happened is exact in both modes: between a
worker's last point and its next one no other worker runs (controlled mode grants one
worker at a time; free mode holds the step lock from a point to the next), so the crash
follows the crashing worker's last point, ``last_seq``, and precedes every later one.
A worker that dies without raising (a signal, ``os._exit``) is not a crash report: the
run broke (exit 4).
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from pathlib import Path

from shmstress.core.result import Violation
from shmstress.core.workers import WorkerInfo

CRASH = "crash"
"""The invariant name an exception raised by a role is reported under."""


@dataclass(frozen=True)
class CrashReport:
    """What a worker whose role raised sends to the coordinator (picklable, small)."""

    traceback: str
    summary: str  # ``KeyError: 3``
    where: str  # ``file.py:12``, the innermost frame
    line: int
    last_seq: int  # the sequence number of the worker's last point; -1: it made none
    t_ns: int  # ``time.monotonic_ns()`` when it raised

    @classmethod
    def of(cls, exc: BaseException, last_seq: int, t_ns: int) -> CrashReport:
        """From inside the worker's ``except``: the first frame, the worker's own loop that
        called the role's ``step``, is the harness's and is left out."""
        tb = exc.__traceback__
        own = tb.tb_next if tb is not None and tb.tb_next is not None else tb
        frames = traceback.extract_tb(own)
        last = frames[-1] if frames else None
        where = f"{Path(last.filename).name}:{last.lineno}" if last is not None else "?"
        summary = traceback.format_exception_only(type(exc), exc)[-1].strip()
        return cls(
            traceback="".join(traceback.format_exception(type(exc), exc, own)).rstrip(),
            summary=summary,
            where=where,
            line=(last.lineno or 0) if last is not None else 0,
            last_seq=last_seq,
            t_ns=t_ns,
        )

    def violation(self, worker: WorkerInfo, t0_ns: int | None = None) -> Violation:
        """The violation it stands for: the worker and the line decide a replay's match
        (the message may carry addresses or values that differ from run to run)."""
        return Violation(
            invariant=CRASH,
            message=f"{worker.describe()} raised {self.summary} at {self.where}",
            fields={"worker": worker.worker_id, "line": self.line},
            worker=worker,
            seq=self.last_seq,
            elapsed_s=None if t0_ns is None else (self.t_ns - t0_ns) / 1e9,
        )

    def describe(self, worker: WorkerInfo) -> str:
        """The text a summary prints under the violation: who, then the whole traceback."""
        return f"{worker.describe()} crashed:\n{self.traceback}"
