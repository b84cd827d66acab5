"""A lincheck failure as the reader gets it: the table, the interleaving, a bundle to replay.

The failing example Hypothesis ended on is written as a scenario file of its own (its
program as data, ``scenario_file.failure_source``), and its execution is replayed there,
step for step, before anything is said: the bundle then names a file that brings the
failure back, and a failure that did not come back is said, not hidden. The plain engine's
own report of that execution (the interleaving, what went wrong) goes under the table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from shmstress.core.exit_reason import ExitCode
from shmstress.core.files import write_text_new
from shmstress.core.plurals import counted
from shmstress.plain.outcome import PlainOutcome
from shmstress.plain.runner import replay
from shmstress.plain.scenario import ScenarioRef
from shmstress.render.plain_report import outcome_lines
from shmstress.repro.bundle import replay_both_ways
from shmstress.repro.plain_bundle import from_outcome, write_plain_bundle
from shmstress.testing.lincheck.scenario_file import FUNCTION, failure_source
from shmstress.testing.lincheck.search import EXECUTION_SEED, SearchResult

_NAME = re.compile(r"[^A-Za-z0-9_]+")


@dataclass(frozen=True)
class FailureFiles:
    """What a failure left: its scenario file, its bundle, and the replayed execution."""

    scenario: Path
    bundle: Path | None
    replayed: PlainOutcome


def write_failure(result: SearchResult, out: Path) -> FailureFiles:
    """Write the failing program's scenario and, if its execution replays there, its bundle."""
    failing = result.failing
    assert failing is not None
    plan = result.plan
    stem = "lincheck-" + _NAME.sub("-", plan.names.target.rpartition(":")[2]).strip("-")
    out.mkdir(parents=True, exist_ok=True)
    scenario = write_text_new(out, stem, ".py", failure_source(plan.names, failing.program),
                              "the failing program")
    spec = replace(plan.spec(scenario), scenario=ScenarioRef(str(scenario.resolve()), FUNCTION))
    replayed = replay(spec, [step.step for step in failing.outcome.steps],
                      failing.outcome.execution_seed)
    bundle = None
    if replayed.failed:
        bundle = write_plain_bundle(
            from_outcome(f"{scenario}:{FUNCTION}", spec, failing.strategy, EXECUTION_SEED,
                         failing.index, replayed), out)
    return FailureFiles(scenario, bundle, replayed)


def failure_lines(result: SearchResult, files: FailureFiles, in_pytest: bool = False
                  ) -> list[str]:
    failing = result.failing
    assert failing is not None
    tally = result.tally
    program = failing.program
    failure = failing.outcome.failure
    lines = [
        f"shmstress lincheck {result.plan.names.target}: "
        + ("not linearizable" if _table(failing.outcome) else "a failing execution"),
        f"  found in execution {tally.first_failure:,} of {tally.executions:,} "
        f"({counted(tally.examples, 'Hypothesis example')}); shrunk to "
        f"{counted(len(program.lanes), 'lane')} of at most "
        f"{counted(program.widest, 'operation')}"
        + (f", {len(program.prefix)} before and {len(program.suffix)} after"
           if program.prefix or program.suffix else ""),
        "  the program:",
        *(f"    {line}" for line in program.describe().splitlines()),
    ]
    table = _table(failing.outcome)
    if table:
        lines += ["", *(f"  {line}" for line in table), ""]
    elif failure is not None:
        lines.append(f"  failure: {failure.message}")
    lines += outcome_lines(files.replayed if files.replayed.failed else failing.outcome)
    lines.append(f"  the program as a scenario: {files.scenario}")
    if files.bundle is None:
        lines.append("  the failure did not come back when its execution was replayed from "
                     f"that file ({files.replayed.end.value}): no bundle written")
    elif in_pytest:
        shell, pytest_form = replay_both_ways(files.bundle)
        lines += [f"  bundle: {files.bundle.absolute()}", f"  replay it: {shell}",
                  f"     or in pytest: {pytest_form}"]
    else:
        shell, _ = replay_both_ways(files.bundle)
        lines += [f"  bundle: {files.bundle}", f"  replay it: {shell}"]
    return lines


def clean_lines(result: SearchResult, elapsed_s: float, accept_uncontrolled: bool = False
                ) -> list[str]:
    """A search that found no failure: what it ran, the executions that had no verdict, and
    the code outside control, which leaves it with none (unless accepted)."""
    tally = result.tally
    judged = counted(tally.examples - tally.unjudged_examples, "example")
    ran = f"({counted(tally.executions, 'execution')}) in {elapsed_s:.1f} s"
    lines = [f"shmstress lincheck {result.plan.names.target}: "
             + (f"linearizable in every one of {judged} {ran}"
                if result.exit_code(accept_uncontrolled) is ExitCode.CLEAN
                else f"no failure in {judged} {ran}, but no verdict: code outside control ran")]
    unjudged = tally.unjudged()
    if unjudged:
        lines.append(f"  no verdict from some executions: {unjudged} (their programs never "
                     "checked their history); Hypothesis drew other examples instead")
    if tally.uncontrolled:
        lines.append("  not under control (the search did not see everything"
                     + ("; accepted):" if accept_uncontrolled else
                        f": exit {int(ExitCode.NOT_CONTROLLED)}, --accept-uncontrolled to "
                        "accept it):"))
        lines += [f"    {line} (in {counted(count, 'execution')})"
                  for line, count in sorted(tally.uncontrolled.items(), key=lambda i: -i[1])]
    return lines


def _table(outcome: PlainOutcome) -> list[str]:
    """The checker's table, from the message ``main`` raised, when it raised one."""
    failure = outcome.failure
    if failure is None:
        return []
    marker = "NotLinearizable: "
    text = failure.details
    start = text.rfind(marker)
    return [] if start < 0 else text[start + len(marker):].rstrip().splitlines()
