"""The text of a replay, for ``shmstress replay`` and ``pytest --stress-replay`` alike.

Both print the same words for the same bundle, so a failure seen in a pytest run reads
exactly as the CLI would show it: which bundle, where it came from, the verdict, and
for a reproduced failure its log snippet and explanation (or a plain bundle's
interleaving).
"""

from __future__ import annotations

from pathlib import Path

from shmstress.controlled.strategies import ShrunkSpec
from shmstress.core.plurals import counted
from shmstress.render.failure import failure_report, report_lines
from shmstress.render.log_names import failure_in_names
from shmstress.render.plain_report import loose_lines, outcome_lines
from shmstress.repro.bundle import Bundle
from shmstress.repro.plain_bundle import PlainBundle
from shmstress.repro.plain_replay import PlainReplayReport
from shmstress.repro.replay import ReplayReport, Verdict


def describe_bundle(bundle: Bundle) -> str:
    counts = ", ".join(f"{n} {role}{'s' if n != 1 else ''}" for role, n in bundle.counts.items())
    source = (f"found in a free run with seed {bundle.seed}" if bundle.mode == "free" else
              f"found by {bundle.strategy.describe()} in execution "
              f"{bundle.execution} of seed {bundle.seed}")
    if isinstance(bundle.strategy, ShrunkSpec):
        shrunk = counted(bundle.preemptions or 0, "preemption")
        source = (f"shrunk to {shrunk} from a failure found in "
                  f"{'a free' if bundle.mode == 'free' else 'a controlled'} run with seed "
                  f"{bundle.seed}")
    return (f"  tracker {bundle.tracker}, variant {bundle.variant}; {counts}; "
            f"{len(bundle.steps):,} steps, {source}")


def _failure_text(report: ReplayReport, path: Path) -> list[str]:
    """The log snippet and explanation of the replayed failure."""
    result = report.result
    if result.recording is None or not result.violations:
        return []
    if report.bundle.names:  # found from a real log: in that log's names
        return report_lines(failure_in_names(result, report.bundle.names, str(path)))
    return report_lines(failure_report(result, str(path)))


def render_replay(report: ReplayReport, path: Path) -> str:
    lines = [f"shmstress replay: {path}", describe_bundle(report.bundle)]
    if report.verdict is Verdict.REPRODUCED:
        lines.append(f"  reproduced: {report.detail}")
        lines += _failure_text(report, path)
    else:
        lines.append(f"  {report.verdict.value}: {report.detail}")
    return "\n".join(lines)


def render_plain_replay(report: PlainReplayReport, bundle: PlainBundle, path: Path) -> str:
    lines = [
        f"shmstress replay: {path}",
        f"  scenario {bundle.scenario}; {len(bundle.steps):,} steps, found by "
        f"{bundle.strategy.describe()} in execution {bundle.execution}"
        + ("" if bundle.strategy.seedless and bundle.seed == 0 else f" of seed {bundle.seed}"),
        f"  {report.verdict.value}: {report.detail}",
    ]
    if report.outcome.failure is not None and report.outcome.failed:
        lines += outcome_lines(report.outcome)
    else:
        lines += loose_lines(bundle.loose)
    return "\n".join(lines)
