"""Replay a bundle from a test: it fails while the failure comes back, passes once fixed.

One way for both bundle kinds, used by ``shmstress.testing.replay`` and by pytest's
``--stress-replay`` items: the bundle is opened through the one reader with the trust check
(``repro.loading.open_bundle``: its code must be the project's or a path the caller names),
replayed exactly, and its report rendered as ``shmstress replay`` renders it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from shmstress.core.errors import ConcurrencyFailure
from shmstress.render.replay_text import render_plain_replay, render_replay
from shmstress.repro.bundle_code import CodeAllowance
from shmstress.repro.loading import open_bundle
from shmstress.repro.plain_bundle import PlainBundle
from shmstress.repro.plain_replay import replay_plain
from shmstress.repro.replay import Verdict, replay_bundle

FAILING = (Verdict.REPRODUCED, Verdict.DIFFERENT_VIOLATION, Verdict.CRASHED)
"""What fails a replay: the failure again, another one, or a crash."""


def replayed(path: Path, allowance: CodeAllowance) -> tuple[Verdict, str]:
    """Replay the bundle at ``path`` once its code is allowed; its verdict and report."""
    bundle = open_bundle(path, allowance)  # nothing is imported before this
    if isinstance(bundle, PlainBundle):
        plain_report = replay_plain(bundle)
        return plain_report.verdict, render_plain_replay(plain_report, bundle, path)
    report = replay_bundle(bundle)
    return report.verdict, render_replay(report, path)


def replay(bundle: str | Path, *, code: Sequence[str] = (), allow_changed: bool = True
           ) -> Verdict:
    """Replay ``bundle`` (either kind) step for step; raise ``ConcurrencyFailure`` with the
    report if the failure comes back (or another one, or a crash), else return the verdict:
    ``NOT_REPRODUCED`` when every recorded step ran and nothing failed (the fix holds),
    ``DIVERGED`` when the code changed so much that the schedule no longer applies.

    Its code may come from the working directory's project and from ``code``'s paths
    (``shmstress replay --code``); ``allow_changed`` (the default here, since a test that
    replays a bundle is there to see a fix hold) lets a file changed since run.
    """
    __tracebackhide__ = True
    path = Path(bundle)
    verdict, text = replayed(path, CodeAllowance.here(code, allow_changed))
    if verdict in FAILING:
        raise ConcurrencyFailure(text)
    return verdict
