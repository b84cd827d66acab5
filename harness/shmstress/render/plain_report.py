"""A plain-code run in words: the summary, the interleaving, what went wrong, how to replay."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from shmstress.analysis.enabling import accessed
from shmstress.analysis.plain_story import PlainStory, plain_story
from shmstress.core.exit_reason import ExitCode
from shmstress.core.plurals import counted, rate
from shmstress.core.trace import step_number
from shmstress.plain.outcome import PlainEnd, PlainOutcome, PlainStep
from shmstress.plain.runner import PlainResult
from shmstress.render.coverage_text import coverage_lines
from shmstress.repro.bundle import replay_both_ways, replay_command

_TRACEBACK_LINES = 8


def _value(step: PlainStep) -> str:
    return f" = {step.value!r}" if step.has_value else ""


def _how(step: PlainStep) -> str:
    access = accessed(step)
    return access[0] if access is not None else "read"


def _seen(step: PlainStep) -> str:
    """`` 0`` when the step recorded the value it read or wrote, else ``" it"``."""
    return f" {step.value!r}" if step.has_value else " it"


def step_text(outcome: PlainOutcome, step: PlainStep) -> str:
    if step.label.startswith("start ") and isinstance(step.value, int):
        return f"start {outcome.who(step.value)}"  # the value is the slot it got
    return f"{step.what}{_value(step)}"


def interleaving_lines(outcome: PlainOutcome, story: PlainStory) -> list[str]:
    """One line per shown step: its number, who, what it did, where; gaps say how many."""
    width = max((len(outcome.who(outcome.steps[i].worker)) for i in story.shown), default=4)
    lines = []
    previous = -1
    for index in story.shown:
        step = outcome.steps[index]
        skipped = index - previous - 1  # every step number left out, even a beginning's
        if skipped:
            lines.append(f"  {'':>5}  ... {skipped} more step{'s' if skipped != 1 else ''}")
        site = f"{step.file}:{step.line}" if step.line > 0 else ""
        what = step_text(outcome, step)
        number = step_number(index)
        lines.append(f"  {number:>5}  {outcome.who(step.worker):<{width}}  {what:<40} {site}"
                     .rstrip())
        previous = index
    return lines


def enabling_lines(outcome: PlainOutcome, story: PlainStory) -> list[str]:
    """Where the race starts: the step it starts at, then each link back from the failure
    (a stale read a lost update already tells is not told twice)."""
    who = outcome.who
    steps = outcome.steps
    links = story.enabling
    start = links.start
    told = {(u.read_step, u.other_step, u.write_step) for u in story.lost_updates}
    lines = [] if start is None else [
        f"the race starts at step {step_number(start)}: {who(steps[start].worker)} "
        f"{step_text(outcome, steps[start])}"]
    failure = outcome.failure
    for stale in links.stale_reads:
        if (stale.read_step, stale.write_step, stale.acted_step) in told:
            continue
        read, write = steps[stale.read_step], steps[stale.write_step]
        reader = who(stale.reader)
        acted = (f"wrote{_seen(steps[stale.acted_step])} (step {step_number(stale.acted_step)})"
                 if stale.acted_step < len(steps)
                 and (failure is None or stale.acted_step != failure.step)
                 else "failed")
        lines.append(
            f"stale read of {stale.what}: {reader} {_how(read)}{_seen(read)} (step "
            f"{step_number(stale.read_step)}), {who(stale.writer)} wrote{_seen(write)} (step "
            f"{step_number(stale.write_step)}), then {reader} {acted} on what it had read")
    for link in links.reads_from:
        read = steps[link.read_step]
        if link.unwritten:
            lines.append(f"{who(link.reader)} {_how(read)} {link.what}{_value(read)} (step "
                         f"{step_number(link.read_step)}): no step had written it")
            continue
        lines.append(
            f"{who(link.reader)} {_how(read)} {link.what}{_value(read)} (step "
            f"{step_number(link.read_step)}), written by {who(link.writer)} at step "
            f"{step_number(link.write_step)}")
    return lines


def explanation_lines(outcome: PlainOutcome, story: PlainStory) -> list[str]:
    """The bug in a sentence or two, from the patterns the story found."""
    who = outcome.who
    steps = outcome.steps
    lines = enabling_lines(outcome, story)
    for update in story.lost_updates:
        read, other, write = (steps[update.read_step], steps[update.other_step],
                              steps[update.write_step])
        reader, writer = who(update.worker), who(update.other)
        lines.append(
            f"lost update of {update.what}: {reader} {_how(read)}{_seen(read)} (step "
            f"{step_number(update.read_step)}), {writer} wrote{_seen(other)} (step "
            f"{step_number(update.other_step)}), then {reader} wrote{_seen(write)} (step "
            f"{step_number(update.write_step)}), computed from "
            f"what it had read: {writer}'s write is lost")
    for notify in story.lost_notifies:
        lines.append(
            f"lost notify: {who(notify.notifier)} notified {notify.condition} at step "
            f"{step_number(notify.notify_step)}, before {who(notify.waiter)} began to wait on "
            f"it at step {step_number(notify.wait_step)}; nothing notifies it again")
    failure = outcome.failure
    if failure is not None and failure.end in (PlainEnd.DEADLOCK, PlainEnd.NO_PROGRESS):
        lines.extend(failure.details.splitlines())
    return lines


def _traceback_tail(text: str) -> list[str]:
    lines = [line for line in text.rstrip().splitlines() if line.strip()]
    if len(lines) > _TRACEBACK_LINES:
        lines = ["...", *lines[-_TRACEBACK_LINES:]]
    return lines


def outcome_lines(outcome: PlainOutcome) -> list[str]:
    """The failing execution: its interleaving, what went wrong, and the process's traceback."""
    failure = outcome.failure
    assert failure is not None
    story = plain_story(outcome)
    shown = len(story.shown)
    total = len(outcome.steps)
    if outcome.preemptions >= 0:
        choices = counted(outcome.preemptions, "preemption")
    else:  # free mode: how often the OS switched between processes
        switches = sum(1 for before, after in zip(outcome.steps, outcome.steps[1:], strict=False)
                       if before.worker != after.worker)
        choices = f"{switches} switch{'es' if switches != 1 else ''} between processes"
    lines = [f"  the interleaving ({total} steps, {choices}"
             f"{f'; {shown} shown' if shown < total else ''}):"]
    lines += interleaving_lines(outcome, story)
    explained = explanation_lines(outcome, story)
    if explained:
        lines.append("  what went wrong:")
        lines += [f"    {line}" for line in explained]
    if failure.end is PlainEnd.FAILED and failure.details:
        lines.append(f"  {outcome.who(failure.worker)} raised, after step {failure.after_step}:")
        lines += [f"    {line}" for line in _traceback_tail(failure.details)]
    lines += loose_lines(outcome.loose)
    return lines


def loose_lines(loose: tuple[int, ...]) -> list[str]:
    """What a free run's replay cannot promise: the steps after which code with no points
    (a library's) ran beside the other processes."""
    if not loose:
        return []
    shown = (", ".join(str(step_number(step)) for step in loose[:8])
             + (", ..." if len(loose) > 8 else ""))
    return [f"  not guaranteed on replay: after {counted(len(loose), 'step')} ({shown}) code "
            "with no points (a library's, not traced) ran beside the other processes; a "
            "replay takes every step in this order, but that code then runs between them, "
            "not beside them (trace it: --trace, and a controlled search orders it too)"]


def _ends(ends: dict[str, int]) -> str:
    return ", ".join(f"{count:,} {end}" for end, count in sorted(ends.items()))


def control_lines(result: PlainResult) -> list[str]:
    """What was under control (steps by kind, what the trace and the self-check covered),
    and what was not: a line each, with the executions it was seen in."""
    kinds = sorted(result.kinds.items(), key=lambda kind: (-kind[1], kind[0]))
    shown = ", ".join(f"{verb} {count:,}" for verb, count in kinds[:8])
    more = len(kinds) - 8
    rest = f", {more} more kinds" if more > 0 else ""
    lines = [f"  controlled: {result.steps:,} steps ({shown}{rest})"]
    traced = result.spec.trace
    lines.append(f"  traced: {', '.join(traced)}" if traced else
                 "  traced: nothing (subscripts of shared memory in the code are no steps)")
    if not result.spec.self_check:
        lines.append("  self-check: off")
    elif not result.uncontrolled:
        lines.append("  self-check: no shared memory changed outside a step; no unknown "
                     "shared mapping; no thread")
    else:
        lines.append(f"  not under control (the search did not see everything: exit "
                     f"{int(ExitCode.NOT_CONTROLLED)}, --accept-uncontrolled to accept it):")
        for line, seen in sorted(result.uncontrolled.items(), key=lambda item: -item[1]):
            lines.append(f"    {line} (in {counted(seen, 'execution')})")
    return lines


def shown_seed(result: PlainResult) -> int | None:
    """The seed a rerun needs; None for a seedless search left at its default (0): its
    schedules do not depend on it, and printing it would suggest they do."""
    exploration = result.exploration
    if result.spec.free is None and exploration.strategy.seedless and exploration.seed == 0:
        return None
    return exploration.seed


def result_lines(result: PlainResult, named: str, bundle: Path | None,
                 require_coverage: bool = False, in_pytest: bool = False) -> list[str]:
    """The whole report of ``shmstress test``; ``in_pytest``, of a failing test: the
    bundle's path absolute, and its replay in pytest too."""
    free = result.spec.free
    mode = (f"free, noise p={free.noise:g}" if free is not None else
            f"controlled, {result.strategy.describe()}")
    seed = shown_seed(result)
    lines = [f"shmstress test {named}: {mode}" + ("" if seed is None else f", seed {seed}"),
             f"  executions: {result.executions:,} ({_ends(result.ends)}) in "
             f"{result.elapsed_s:.1f} s ({rate(result.executions_per_s, 'executions')})"]
    if result.interrupted:
        ran = f"{result.executions:,} execution{'s' if result.executions != 1 else ''}"
        lines.append(f"  interrupted (Ctrl-C or SIGTERM) after {ran}: what they covered is "
                     f"below; nothing after them ran (exit {int(ExitCode.INTERRUPTED)})")
    failing = result.failing
    if result.limit is not None and failing is not None:
        lines.append(f"  limit hit in execution {result.failing_index + 1}, not a bug of the "
                     f"scenario: {result.limit} (exit {int(ExitCode.LIMIT)}, no bundle)")
        return lines
    if failing is None:
        bound = result.ends.get(PlainEnd.STEP_BOUND.value, 0)
        lines.append("  failures: none found (what the search covered is below)")
        if bound:
            lines.append(f"  note: {bound:,} execution{'s' if bound != 1 else ''} reached "
                         f"--max-steps {result.spec.max_steps:,} before every process ended: "
                         "what comes after was not explored")
        if result.coverage is not None:
            lines.extend(coverage_lines(result.coverage, require_coverage))
        lines.extend(control_lines(result))
        return lines
    failure = failing.failure
    assert failure is not None
    lines.append(f"  failure in execution {result.failing_index + 1}: {failure.message}")
    if failing.end is PlainEnd.HUNG:
        return lines
    lines += outcome_lines(failing)
    if result.uncontrolled:
        lines += control_lines(result)[2:]
    if bundle is not None:
        if not in_pytest:
            lines += [f"  bundle: {bundle}", f"  replay it: {replay_command(bundle)}"]
        else:
            shell, pytest_form = replay_both_ways(bundle)
            lines += [f"  bundle: {bundle.absolute()}", f"  replay it: {shell}",
                      f"     or in pytest: {pytest_form}"]
    return lines


def result_json(result: PlainResult, named: str, bundle: Path | None, log: Path | None,
                exit_code: int) -> dict[str, object]:
    """The report of ``shmstress test`` as data (``--json``): the fields of ``result_lines``,
    with plain numbers, and the failing execution numbered as printed (from 1)."""
    free = result.spec.free
    failing = result.failing
    failure = None if failing is None or failing.failure is None or result.limit else {
        "execution": result.failing_index + 1, "end": failing.end.value,
        "process": failing.who(failing.failure.worker), "message": failing.failure.message,
        "steps": len(failing.steps), "preemptions": failing.preemptions,
        "bundle": None if bundle is None else str(bundle),
        "replay": None if bundle is None else replay_command(bundle),
        "log": None if log is None else str(log)}
    coverage = result.coverage
    return {
        "command": "test", "scenario": named, "mode": "free" if free else "controlled",
        "strategy": None if free else result.strategy.describe(),
        "noise": None if free is None else asdict(free),
        "seed": shown_seed(result),
        "executions": result.executions, "ends": dict(result.ends),
        "elapsed_s": result.elapsed_s, "executions_per_s": result.executions_per_s,
        "complete": result.exhausted, "interrupted": result.interrupted,
        "limit": result.limit, "failure": failure,
        "coverage": None if coverage is None else {**asdict(coverage),
                                                   "thin": list(coverage.thin())},
        "steps": result.steps, "kinds": dict(result.kinds), "traced": list(result.spec.trace),
        "self_check": result.spec.self_check, "uncontrolled": dict(result.uncontrolled),
        "exit_code": exit_code,
    }
