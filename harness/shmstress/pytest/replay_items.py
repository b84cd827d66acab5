"""``pytest --stress-replay BUNDLE``: a repro bundle as a test item.

A CI failure hands over a bundle; a developer who works in pytest wants to see it fail
in pytest, with the explanation, and see it pass once fixed, without switching to the
CLI. The item replays the bundle exactly (``shmstress replay``'s engine and words), once
the code it names is known to be the project's (pytest's rootdir) or a path named with
``--stress-code``, as ``shmstress replay`` checks: a bundle is data, and a downloaded one
must not import a file from anywhere (a fix changes the code, so a changed file runs). It
fails when the failure comes back (or a different violation or a crash does), passes
when every recorded step ran and nothing broke, and skips when the code changed so
much that the recorded schedule no longer applies (a diverged replay proves nothing).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from shmstress.core.errors import ShmstressError
from shmstress.repro.bundle import replay_command
from shmstress.repro.bundle_code import CodeAllowance
from shmstress.repro.replay import Verdict
from shmstress.testing.replaying import FAILING, replayed


class ReplayFailedError(Exception):
    """The replayed bundle failed again; its text is the whole replay report."""


class BundleReplayItem(pytest.Item):
    """One bundle given to ``--stress-replay``; ``allowance`` says where its code may come
    from (``repro.bundle_code``): the rootdir's project and ``--stress-code``'s paths."""

    def __init__(self, *, bundle: Path, allowance: CodeAllowance, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.bundle = bundle
        self.allowance = allowance

    def runtest(self) -> None:
        __tracebackhide__ = True
        try:
            verdict, text = replayed(self.bundle, self.allowance)
        except ShmstressError as exc:  # unreadable, or no longer fits its tracker
            text = str(exc)  # a refused or unreadable bundle's line names it already
            named = text if text.startswith(str(self.bundle)) else f"{self.bundle}: {text}"
            raise ReplayFailedError(f"shmstress replay: {named}") from None
        self.user_properties.append(("replay_verdict", verdict.value))
        if verdict in FAILING:
            raise ReplayFailedError(text)
        if verdict is Verdict.DIVERGED:
            pytest.skip(text)

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


def replay_items(session: pytest.Session, bundles: list[str],
                 allowance: CodeAllowance) -> list[pytest.Item]:
    """One item per bundle, named by the path as given (a node ID xdist can repeat)."""
    return [
        BundleReplayItem.from_parent(session, name=f"stress-replay[{text}]",
                                     bundle=Path(text).absolute(), allowance=allowance)
        for text in bundles
    ]
