"""``shmstress check``: validate a tracker plugin without starting a single worker.

``run`` already refuses a malformed tracker, but only probes the variant it
runs for a few steps, for what free mode needs. ``check`` is the longer and
stricter look a plugin author wants while writing one: every variant, every
phase, many steps, and what controlled mode needs too (every step returns,
and a step that goes on makes a point).
"""

from __future__ import annotations

import argparse

from harness import registry
from harness.config import RunConfig, resolve
from harness.control import Phase
from harness.plugin_check import ProbeReport, probe

_PHASES = (Phase.RUN, Phase.DRAIN, Phase.STOP)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "check", help="validate a tracker (plugin) and probe every variant sequentially",
        description="Load a tracker, check its class, then build each variant in a throwaway "
        "arena and step its roles one at a time: a malformed tracker fails with one line and "
        "exit code 2.",
    )
    parser.add_argument("--tracker", default="dra",
                        help="installed tracker name or path/to/file.py:ClassName (default: dra)")
    parser.add_argument("--variant", action="append",
                        help="variant(s) to probe (default: every variant)")
    parser.add_argument("--steps", type=int, default=200, metavar="N",
                        help="steps per worker and phase (default 200)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the step order (0)")
    parser.set_defaults(handler=_cmd_check)


def _cmd_check(args: argparse.Namespace) -> int:
    tracker_cls = registry.load(args.tracker)
    reports = []
    for variant in args.variant or list(tracker_cls.variants):
        config = resolve(RunConfig(tracker=args.tracker, variant=variant, seed=args.seed),
                         tracker_cls)
        assert config.variant is not None
        reports.append(probe(
            tracker_cls, config.variant, config.params, config.counts,
            steps_per_worker=max(1, args.steps), phases=_PHASES, seed=args.seed, strict=True,
            origin=f"tracker {args.tracker}",
        ))
    print(render_check(args.tracker, reports))
    return 0


def render_check(spec: str, reports: list[ProbeReport]) -> str:
    lines = [f"tracker {spec}: ok"]
    for report in reports:
        seen = (f"; {len(report.violations)} violation(s) in sequential steps (not races)"
                if report.violations else "")
        lines.append(
            f"  {report.variant:22} {report.workers} workers, {report.steps} steps, "
            f"{report.points} points, {report.arrays} arrays, {report.locks} locks{seen}"
        )
    return "\n".join(lines)
