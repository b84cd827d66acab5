"""``pytest --stress-replay BUNDLE``: a repro bundle as a test item.

A CI failure hands over a bundle; a developer who works in pytest wants to see it fail
in pytest, with the explanation, and see it pass once fixed, without switching to the
CLI. The item replays the bundle exactly (``shmstress replay``'s engine and words): it
fails when the failure comes back (or a different violation or a crash does), passes
when every recorded step ran and nothing broke, and skips when the code changed so
much that the recorded schedule no longer applies (a diverged replay proves nothing).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from shmstress.core.errors import ShmstressError
from shmstress.render.replay_text import render_plain_replay, render_replay
from shmstress.repro.bundle import load_bundle, replay_command
from shmstress.repro.plain_bundle import peek_plain
from shmstress.repro.plain_replay import replay_plain
from shmstress.repro.replay import Verdict, replay_bundle

_FAILING = (Verdict.REPRODUCED, Verdict.DIFFERENT_VIOLATION, Verdict.CRASHED)


class ReplayFailedError(Exception):
    """The replayed bundle failed again; its text is the whole replay report."""


class BundleReplayItem(pytest.Item):
    """One bundle given to ``--stress-replay``."""

    def __init__(self, *, bundle: Path, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.bundle = bundle

    def runtest(self) -> None:
        __tracebackhide__ = True
        try:
            verdict, text = self._replay()
        except ShmstressError as exc:  # unreadable, or no longer fits its tracker
            raise ReplayFailedError(f"shmstress replay: {self.bundle}: {exc}") from None
        self.user_properties.append(("replay_verdict", verdict.value))
        if verdict in _FAILING:
            raise ReplayFailedError(text)
        if verdict is Verdict.DIVERGED:
            pytest.skip(text)

    def _replay(self) -> tuple[Verdict, str]:
        plain = peek_plain(self.bundle)
        if plain is not None:
            plain_report = replay_plain(plain)
            return plain_report.verdict, render_plain_replay(plain_report, plain, self.bundle)
        report = replay_bundle(load_bundle(self.bundle))
        return report.verdict, render_replay(report, self.bundle)

    def repr_failure(
        self,
        excinfo: pytest.ExceptionInfo[BaseException],
        style: Any = None,
    ) -> str:
        if isinstance(excinfo.value, ReplayFailedError):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo, style=style))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, replay_command(Path(self.bundle))


def replay_items(session: pytest.Session, bundles: list[str]) -> list[pytest.Item]:
    """One item per bundle, named by the path as given (a node ID xdist can repeat)."""
    return [
        BundleReplayItem.from_parent(session, name=f"stress-replay[{text}]",
                                     bundle=Path(text).absolute())
        for text in bundles
    ]
