"""The failure report of an execution found from a real log, in the log's names.

A bundle ``import-log`` wrote stores which model object stands for which object of the
log (``Bundle.names``); whoever explains or draws that failure again (``import-log``
itself, ``replay``, ``show``, ``log``) words it with those names, so it reads like the
log it came from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from shmstress.core.result import RunResult
from shmstress.plugin.renaming import rename_text, renamed
from shmstress.plugin.wording import Wording, wording_by_name
from shmstress.render.failure import FailureReport, failure_report


def wording_in_names(result: RunResult, names: Mapping[str, str]) -> Wording:
    """The wording of ``result``'s tracker, naming objects as ``names`` (model name -> the
    log's) says: what every view of a bundle ``import-log`` wrote words it with."""
    wording = wording_by_name(result.config.tracker, result.config.params)
    if not names:
        return wording
    return Wording(renamed(wording.words, names), wording.invariants, wording.params)


def failure_in_names(result: RunResult, names: Mapping[str, str],
                     bundle: str | None = None) -> FailureReport:
    """``failure_report`` of ``result`` with the model's names replaced by ``names``'."""
    report = failure_report(result, bundle, wording=wording_in_names(result, names))
    if names and report.explanation:  # the outcome line names objects as the model does
        report = replace(report, explanation=rename_text(report.explanation, names))
    return report
