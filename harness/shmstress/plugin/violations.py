"""What the invariants found, in the tracker's words: one path for free and controlled runs.

Workers store a violation as an invariant index and a few ints (no text on the
hot path); the coordinator renders them here after the run, and asks the
tracker for the checks that need a state at rest. Both call into plugin code,
so both are guarded: a tracker whose invariant raises is a malformed tracker
(one line, exit 2), not a violation found (exit 1) with a traceback.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from shmstress.core.control import ControlBlock
from shmstress.core.errors import PluginError
from shmstress.core.result import Violation
from shmstress.core.workers import WorkerInfo, Workers
from shmstress.plugin.assembly import found_at_rest
from shmstress.plugin.tracker import Invariant, Tracker


def recorded_violations(
    control: ControlBlock,
    invariants: Sequence[Invariant],
    workers: Sequence[WorkerInfo],
    params: Mapping[str, int],
    t0_ns: int | None = None,
) -> list[Violation]:
    """The violations workers recorded while running; with ``t0_ns``, each carries the
    seconds from the run's start (free mode; controlled time is steps, not seconds)."""
    found = []
    for record in control.violation_records():
        invariant = invariants[record.invariant]
        fields = dict(zip(invariant.fields, record.fields, strict=False))
        found.append(Violation(
            invariant=invariant.name,
            message=_render(invariant, fields, workers, params),
            fields=fields,
            worker=workers[record.worker] if 0 <= record.worker < len(workers) else None,
            seq=record.seq,
            elapsed_s=None if t0_ns is None else (record.t_ns - t0_ns) / 1e9,
        ))
    return found


def at_rest_violations(
    tracker_cls: type[Tracker],
    tracker: Tracker,
    workers: Sequence[WorkerInfo],
    params: Mapping[str, int],
    checks: Sequence[str] | None,
) -> list[Violation]:
    """The invariants' checks at rest (every worker gone), limited to ``checks`` if given."""
    by_name = {inv.name: inv for inv in tracker_cls.invariants}
    violations = []
    for found in found_at_rest(tracker_cls, tracker):
        if checks is not None and found.invariant not in checks:
            continue
        invariant = by_name.get(found.invariant)
        if invariant is None:
            raise PluginError(
                f"tracker {tracker_cls.name}: check_at_rest() reported "
                f"{found.invariant!r}, which is not one of its invariants"
            )
        violations.append(Violation(
            invariant=found.invariant,
            message=_render(invariant, found.fields, workers, params),
            fields=dict(found.fields),
            worker=None,
            seq=None,
            elapsed_s=None,
            at_rest=True,
        ))
    return violations


def _render(
    invariant: Invariant,
    fields: Mapping[str, int],
    workers: Sequence[WorkerInfo],
    params: Mapping[str, int],
) -> str:
    try:
        return invariant.render(fields, Workers(workers), params)
    except Exception as exc:
        raise PluginError(
            f"invariant {invariant.name!r} render() raised {type(exc).__name__}: {exc} "
            f"for fields {dict(fields)}"
        ) from exc
