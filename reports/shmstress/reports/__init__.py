"""Campaign results (``results.jsonl``): their schema, reading and aggregating them, and
(in ``shmstress.reports.report``) the charts and the HTML index built from them.

Importing this package does not load matplotlib: the engine imports the schema when it
writes a record, and only building a report needs the plots.
"""

from __future__ import annotations

from shmstress.reports.aggregate import (
    DetectionCurve,
    FailureGroup,
    TrendPoint,
    detection_curves,
    group_failures,
    trend_by_variant,
)
from shmstress.reports.results import (
    ConfigStats,
    LoadedResults,
    ResultsFormatError,
    Trial,
    TrialConfig,
    Violation,
    group_by_config,
    load_results,
    load_results_file,
    parse_trial,
)
from shmstress.reports.wilson import wilson_interval

__all__ = [
    "ConfigStats",
    "DetectionCurve",
    "FailureGroup",
    "LoadedResults",
    "ResultsFormatError",
    "TrendPoint",
    "Trial",
    "TrialConfig",
    "Violation",
    "detection_curves",
    "group_by_config",
    "group_failures",
    "load_results",
    "load_results_file",
    "parse_trial",
    "trend_by_variant",
    "wilson_interval",
]
