"""The failure report of an execution found from a real log, in the log's names.

A bundle ``import-log`` wrote stores which model object stands for which object of the
log (``Bundle.names``); whoever explains that failure again (``import-log`` itself,
``replay``) words it with those names, so the explanation reads like the log it came from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from shmstress.core.result import RunResult
from shmstress.plugin.renaming import rename_text, renamed
from shmstress.plugin.wording import Wording, wording_by_name
from shmstress.render.failure import FailureReport, failure_report


def failure_in_names(result: RunResult, names: Mapping[str, str],
                     bundle: str | None = None) -> FailureReport:
    """``failure_report`` of ``result`` with the model's names replaced by ``names``'."""
    wording = wording_by_name(result.config.tracker, result.config.params)
    if names:
        wording = Wording(renamed(wording.words, names), wording.invariants, wording.params)
    report = failure_report(result, bundle, wording=wording)
    if names and report.explanation:  # the outcome line names objects as the model does
        report = replace(report, explanation=rename_text(report.explanation, names))
    return report
