"""``shmstress import-log`` in Python: a log of a real failure, turned into a bundle.

Reading the log (``render.klog_reading``), sizing the scenario from the objects
it names (``Words.parameters_for``), searching for an execution that holds its
lines in order (``controlled.log_search``), then the usual artifacts of a
failure: a bundle of that execution, which replays like any other, and an
explanation in the log's own names (``plugin.renaming``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from shmstress.controlled.log_match import ANYWHERE, MARKED, Expected, shown
from shmstress.controlled.log_search import SearchOptions, SearchResult, search
from shmstress.controlled.strategies import FollowSpec
from shmstress.core.config import RunConfig
from shmstress.core.errors import ConfigError
from shmstress.core.exit_reason import ExitCode, ExitReason
from shmstress.core.result import RunResult
from shmstress.plugin import registry
from shmstress.plugin.wording import wording_of
from shmstress.render.failure import FailureReport
from shmstress.render.klog_reading import Entry, Gap, LogText, Unreadable, read_log
from shmstress.render.log_names import failure_in_names
from shmstress.repro.bundle import Bundle, from_execution

__all__ = ["ANYWHERE", "MARKED", "ImportReport", "SearchOptions", "import_log", "log_lines"]


@dataclass(frozen=True)
class ImportReport:
    log: LogText
    config: RunConfig
    search: SearchResult
    bundle: Bundle | None  # of the matching execution, when it broke an invariant
    names: Mapping[str, str] = field(default_factory=dict)  # model name -> the log's name
    failure: FailureReport | None = None

    @property
    def unreadable(self) -> tuple[Unreadable, ...]:
        return tuple(item for item in self.log.items if isinstance(item, Unreadable))

    @property
    def exit_code(self) -> ExitCode:
        """1: the log's failure reproduced; 3: matched, but nothing broke; 8: no execution
        holds the log's lines in order."""
        if self.search.match is None:
            return ExitCode.LOG_MISMATCH
        return ExitCode.FAILURE if self.search.violating else ExitCode.NOT_REPRODUCED


def log_lines(log: LogText) -> list[Expected]:
    """The log's entries as lines to match, each knowing whether a ``...`` came before it."""
    lines: list[Expected] = []
    gap = False
    for item in log.items:
        if isinstance(item, Gap):
            gap = True
        elif isinstance(item, Entry):
            lines.append(Expected(item.number, item.thread, item.message,
                                  {key: shown(value) for key, value in item.fields.items()},
                                  gap_before=gap))
            gap = False
    return lines


def _objects(lines: list[Expected], kinds: Mapping[str, str]) -> dict[str, int]:
    """How many distinct objects of each kind the log names."""
    named: dict[str, set[str]] = {}
    for line in lines:
        for key, value in line.fields.items():
            named.setdefault(kinds.get(key, key), set()).add(value)
    return {kind: len(values) for kind, values in named.items()}


def import_log(text: str, tracker: str, variant: str | None = None, gaps: str = MARKED,
               options: SearchOptions | None = None) -> ImportReport:
    """Search ``tracker``'s model for the execution ``text`` (a klog/ktesting log) is of."""
    options = options or SearchOptions()
    if gaps not in (MARKED, ANYWHERE):
        raise ConfigError(f"--gaps must be {MARKED} or {ANYWHERE}, got {gaps!r}")
    log = read_log(text)
    lines = log_lines(log)
    if not lines:
        raise ConfigError("the log has no klog line to import")
    tracker_cls = registry.load(tracker)
    words = wording_of(tracker_cls, {}).words
    params = dict(words.parameters_for(_objects(lines, words.kinds)))
    config = RunConfig(tracker=tracker, variant=variant, params=params, seed=options.seed)
    found = search(config, lines, gaps, options)
    config = found.config
    match = found.match
    if match is None:
        return ImportReport(log, config, found, None)
    names = {model: log_name for kinds in match.matching.model_names.values()
             for model, log_name in kinds.items()}
    outcome = match.outcome
    bundle = from_execution(config, FollowSpec(), match.execution - 1,
                            outcome.execution_seed,
                            outcome.steps, outcome.phase_changes, outcome.violations,
                            outcome.preemptions)
    if bundle is not None:
        bundle = replace(bundle, names=dict(names))
    result = RunResult(
        config=config, exit_reason=ExitReason.VIOLATION if outcome.failed
        else ExitReason.EXECUTIONS_DONE,
        violations=outcome.violations, violation_count=outcome.violation_count,
        elapsed_s=found.elapsed_s,
        points=len(outcome.steps), workers=tuple(
            replace(w, pid=pid) for w, pid in zip(found.workers, found.pids, strict=True)),
        recording=match.recording, phase_changes=outcome.phase_changes)
    failure = failure_in_names(result, names) if outcome.failed else None
    return ImportReport(log, config, found, bundle, names, failure)
