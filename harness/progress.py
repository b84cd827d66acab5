"""Progress on long work: a tqdm bar on a terminal, a heartbeat line every few seconds otherwise.

CI logs must not fill with carriage returns, so without a TTY we print a
plain line at most every ``heartbeat_s`` seconds, and nothing for short runs.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import Any

from tqdm import tqdm


class RunProgress:
    def __init__(self, duration: float, enabled: bool = True, heartbeat_s: float = 10.0) -> None:
        self._duration = duration
        self._tty = enabled and sys.stderr.isatty() and duration >= 2.0
        self._heartbeat = enabled and not self._tty
        self._heartbeat_s = heartbeat_s
        self._last_beat = time.monotonic()
        self._bar: tqdm[Any] | None = None

    def __enter__(self) -> RunProgress:
        if self._tty:
            self._bar = tqdm(total=round(self._duration, 1), unit="s", leave=False,
                             bar_format="{l_bar}{bar}| {n:.1f}/{total:.1f} s {postfix}")
        return self

    def update(self, elapsed: float, points: int) -> None:
        if self._bar is not None:
            self._bar.n = round(min(elapsed, self._duration), 1)
            self._bar.set_postfix_str(f"{points:,} points", refresh=True)
        elif self._heartbeat and time.monotonic() - self._last_beat >= self._heartbeat_s:
            self._last_beat = time.monotonic()
            print(f"shmstress: {elapsed:.0f} s, {points:,} points", file=sys.stderr, flush=True)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.close()
