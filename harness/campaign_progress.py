"""Campaign progress: a tqdm bar over trials on a terminal, a plain heartbeat line otherwise.

CI logs must not fill with carriage returns, so without a TTY a single line goes
to stderr at most every ``heartbeat_s`` seconds, including during a long trial
(the runner's progress callback ticks it), so a stuck job is told from a slow one.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import Any, TextIO

from tqdm import tqdm


class CampaignProgress:
    def __init__(
        self,
        total: int,
        done: int = 0,
        *,
        enabled: bool = True,
        heartbeat_s: float = 30.0,
        stream: TextIO | None = None,
    ) -> None:
        self._stream = stream or sys.stderr
        self._total = total
        self._done = done
        self._violations = 0
        self._errors = 0
        self._current = ""
        self._tty = enabled and self._stream.isatty()
        self._heartbeat = enabled and not self._tty
        self._heartbeat_s = heartbeat_s
        self._t0 = time.monotonic()
        self._last_beat = self._t0
        self._bar: tqdm[Any] | None = None

    def __enter__(self) -> CampaignProgress:
        if self._tty:
            self._bar = tqdm(
                total=self._total, initial=self._done, unit="trial", file=self._stream
            )
        return self

    def start_trial(self, label: str) -> None:
        self._current = label
        if self._bar is not None:
            self._bar.set_description_str(label, refresh=True)
        self.tick()

    def trial_done(self, outcome: str) -> None:
        self._done += 1
        self._violations += outcome == "violation"
        self._errors += outcome == "error"
        if self._bar is not None:
            self._bar.set_postfix(violations=self._violations, errors=self._errors, refresh=False)
            self._bar.update(1)
        self.tick()

    def tick(self, elapsed: float = 0.0, points: int = 0) -> None:
        """Called between trials and, through the runner's callback, during each trial."""
        if not self._heartbeat:
            return
        now = time.monotonic()
        if now - self._last_beat < self._heartbeat_s:
            return
        self._last_beat = now
        print(
            f"shmstress campaign: {self._done}/{self._total} trials done "
            f"(violations: {self._violations}, errors: {self._errors}) after "
            f"{now - self._t0:.0f} s; running {self._current}",
            file=self._stream,
            flush=True,
        )

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.close()
