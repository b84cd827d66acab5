"""Progress on long work: a tqdm bar on a terminal, a heartbeat line every few seconds otherwise.

CI logs must not fill with carriage returns, so without a TTY we print a plain
line at most every ``heartbeat_s`` seconds, and nothing for work shorter than that.
``RunProgress`` follows one run (``shmstress run``), ``CampaignProgress`` a campaign.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any, Self, TextIO

from tqdm import tqdm


class Progress:
    """The bar-or-heartbeat choice and the heartbeat's pace; subclasses say what to show."""

    def __init__(self, *, enabled: bool, heartbeat_s: float, stream: TextIO | None = None) -> None:
        self._stream = stream or sys.stderr
        self._enabled = enabled
        self._heartbeat = False
        self._heartbeat_s = heartbeat_s
        self._t0 = time.monotonic()
        self._last_beat = self._t0
        self._bar: tqdm[Any] | None = None

    def _new_bar(self, stream: TextIO) -> tqdm[Any] | None:
        """The terminal's bar, or None to fall back to heartbeat lines there too."""
        return None

    def _beat(self, line: Callable[[float], str]) -> None:
        """Print ``line(seconds since start)`` if heartbeat_s has passed since the last one."""
        if not self._heartbeat:
            return
        now = time.monotonic()
        if now - self._last_beat < self._heartbeat_s:
            return
        self._last_beat = now
        print(line(now - self._t0), file=self._stream, flush=True)

    def __enter__(self) -> Self:
        if self._enabled and self._stream.isatty():
            self._bar = self._new_bar(self._stream)
        self._heartbeat = self._enabled and self._bar is None
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.close()


class RunProgress(Progress):
    """Seconds and points of one run; no bar for runs under 2 s."""

    def __init__(self, duration: float, enabled: bool = True, heartbeat_s: float = 10.0) -> None:
        super().__init__(enabled=enabled, heartbeat_s=heartbeat_s)
        self._duration = duration

    def _new_bar(self, stream: TextIO) -> tqdm[Any] | None:
        if self._duration < 2.0:
            return None
        return tqdm(total=round(self._duration, 1), unit="s", leave=False, file=stream,
                    bar_format="{l_bar}{bar}| {n:.1f}/{total:.1f} s {postfix}")

    def update(self, elapsed: float, points: int) -> None:
        if self._bar is not None:
            self._bar.n = round(min(elapsed, self._duration), 1)
            self._bar.set_postfix_str(f"{points:,} points", refresh=True)
        else:
            self._beat(lambda _: f"shmstress: {elapsed:.0f} s, {points:,} points")


class CampaignProgress(Progress):
    """Trials of a campaign; counts cover the whole campaign, earlier invocations included.

    The heartbeat also ticks during a long trial (the runner's progress callback), so a
    stuck job is told from a slow one.
    """

    def __init__(
        self,
        total: int,
        done: int = 0,
        outcomes: Mapping[str, int] | None = None,
        *,
        enabled: bool = True,
        heartbeat_s: float = 30.0,
        stream: TextIO | None = None,
    ) -> None:
        super().__init__(enabled=enabled, heartbeat_s=heartbeat_s, stream=stream)
        self._total = total
        self._done = done
        self._violations = (outcomes or {}).get("violation", 0)
        self._errors = (outcomes or {}).get("error", 0)
        self._current: str | None = None
        self._done_here = 0  # trials finished by this invocation: the rate is theirs

    def _new_bar(self, stream: TextIO) -> tqdm[Any] | None:
        bar = tqdm(total=self._total, initial=self._done, unit="trial", file=stream)
        bar.set_postfix(violations=self._violations, errors=self._errors, refresh=False)
        return bar

    def start_trial(self, label: str) -> None:
        self._current = label
        if self._bar is not None:
            self._bar.set_description_str(label, refresh=True)
        self.tick()

    def trial_done(self, outcome: str) -> None:
        self._done += 1
        self._done_here += 1
        self._violations += outcome == "violation"
        self._errors += outcome == "error"
        self._current = None
        if self._bar is not None:
            self._bar.set_postfix(violations=self._violations, errors=self._errors, refresh=False)
            self._bar.update(1)
        self.tick()

    def tick(self, elapsed: float = 0.0, points: int = 0) -> None:
        """Called between trials and, through the runner's callback, during each trial."""
        self._beat(self._line)

    def _line(self, seconds: float) -> str:
        line = (
            f"shmstress campaign: {self._done}/{self._total} trials done (violations: "
            f"{self._violations}, errors: {self._errors}), {seconds:.0f} s into this run"
        )
        if self._done_here and seconds > 0:
            rate = self._done_here / seconds
            left = max(0, self._total - self._done) / rate
            line += f", {rate * 60:.1f} trials/min, about {_duration(left)} left"
        return f"{line}; running {self._current}" if self._current else line


def _duration(seconds: float) -> str:
    """``45 s``, ``12 min``, ``2.5 h``: an ETA as precise as it can be."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
