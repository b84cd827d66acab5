"""``shmstress campaign``, ``merge`` and ``report``: argument parsing and exit codes only."""

from __future__ import annotations

import argparse
import itertools
import math
import re
import secrets
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from shmstress.campaign.bundles import campaign_bundle_dir
from shmstress.campaign.distributed import INCOMPLETE_EXIT
from shmstress.campaign.grid import (
    DEFAULT_DURATION_S,
    DEFAULT_EXECUTIONS,
    DEFAULT_NOISES,
    DEFAULT_STRATEGIES,
    DEFAULT_TRIALS,
    STRATEGIES,
    GridSpec,
    expand,
    new_campaign_id,
)
from shmstress.campaign.results_file import ResultsFile
from shmstress.campaign.runner import (
    RESULTS_FILE,
    CampaignSummary,
    campaign_outcomes,
    prepare,
    resume_spec,
    run_campaign,
    save_spec,
)
from shmstress.campaign.scenarios import named_scenarios
from shmstress.cli.args import key_value, no_repeats, split_list, with_examples
from shmstress.cli.commands import add_command
from shmstress.cli.run import DEFAULT_TRACKER, add_database_option, learning_from_args
from shmstress.core.errors import ConfigError
from shmstress.core.exit_reason import ExitCode, ExitReason
from shmstress.core.files import require_writable
from shmstress.core.noise import NOISE_POLICIES, NoiseConfig
from shmstress.core.plurals import counted
from shmstress.core.shard import WHOLE, Shard

DEFAULT_OUT = Path("shmstress-out/campaign")
DEFAULT_REPORT_OUT = Path("shmstress-out/report")


def _split(text: str) -> list[str]:
    try:
        return split_list(text)
    except argparse.ArgumentTypeError as exc:
        raise ConfigError(str(exc)) from None


def _int_list(text: str) -> tuple[int, ...]:
    parts = split_list(text)
    try:
        return tuple(int(part) for part in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected integers like 1,2, got {text!r}") from None


def _float_list(text: str) -> tuple[float, ...]:
    parts = split_list(text)
    try:
        values = tuple(float(part) for part in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers like 0.1,0, got {text!r}") from None
    if not all(math.isfinite(value) for value in values):
        raise argparse.ArgumentTypeError(f"expected finite numbers, got {text!r}")
    return values


_GATEWAY_RE = re.compile(r"^(?:(\d+)\*)?([^/]*)((?://[^/]+)*)$")


def gateway(text: str) -> str:
    """argparse type of ``--tx``: an xdist gateway spec (``[N*]popen``, ``socket=HOST:PORT``,
    ``ssh=[USER@]HOST``, ``vagrant_ssh=NAME``, each with optional ``//key=value``), checked
    here because execnet accepts any word and fails with a traceback once pytest runs."""
    match = _GATEWAY_RE.match(text)
    problem = None
    if match is None:
        problem = "not a gateway spec"
    else:
        count, kind, _ = match.groups()
        name, equals, value = kind.partition("=")
        if count is not None and int(count) < 1:
            problem = "the count before '*' must be >= 1"
        elif (name, bool(equals), bool(value)) in (("popen", False, False), ("ssh", True, True),
                                                   ("vagrant_ssh", True, True)):
            pass
        elif name == "socket" and equals:
            host, colon, port = value.rpartition(":")
            if not (host and colon and port.isdigit() and 0 < int(port) < 65536):
                problem = "socket= needs HOST:PORT"
        else:
            problem = "expected popen, socket=HOST:PORT, ssh=[USER@]HOST or vagrant_ssh=NAME"
    if problem:
        raise argparse.ArgumentTypeError(f"--tx {text!r}: {problem}")
    return text


def _role_counts(text: str) -> tuple[str, tuple[int, ...]]:
    role, sep, counts = text.partition("=")
    if not sep or not role:
        raise argparse.ArgumentTypeError(f"expected ROLE=N[,N...], got {text!r}")
    return role, _int_list(counts)


def _worker_grid(args: argparse.Namespace) -> tuple[dict[str, int], ...]:
    """The product of every role's count list; empty means the tracker's default grid."""
    per_role: dict[str, tuple[int, ...]] = no_repeats("--workers", args.workers)
    if not per_role:
        return ()
    roles = list(per_role)
    return tuple(
        dict(zip(roles, combo, strict=True)) for combo in itertools.product(*per_role.values())
    )


_GRID_OPTIONS = (
    "tracker", "variant", "workers", "noise", "strategy", "trials", "duration", "executions",
    "param", "seed", "expect_clean", "noise_policy", "campaign_id", "shard", "scenarios",
)
_TRACKER_OPTIONS = (("--tracker", "tracker"), ("--variant", "variant"), ("--workers", "workers"),
                    ("--param", "param"), ("--noise-policy", "noise_policy"),
                    ("--duration", "duration"))
"""What only a tracker's trials take: a scenario starts its own processes, has no
parameters, and explores --executions executions, free trials too."""


def _refuse_options_of_absent_modes(args: argparse.Namespace, strategies: tuple[str, ...]) -> None:
    """``--noise`` or ``--duration`` without a free strategy, ``--executions`` without a
    controlled one: the grid would never use them; a tracker's options in a grid of
    scenarios."""
    if args.scenarios:
        given = [flag for flag, name in _TRACKER_OPTIONS if getattr(args, name) not in (None, [])]
        if given:
            raise ConfigError(f"{', '.join(given)} appl{'ies' if len(given) == 1 else 'y'} to a "
                              "tracker's trials, not to scenarios (FILE:function): run them in "
                              "a campaign of their own")
        if args.tx:
            raise ConfigError("--tx spreads a tracker's trials; run scenarios locally, or "
                              "shard them with --shard I/N")
        if "free" not in strategies and args.noise is not None:
            raise ConfigError("--noise would apply to no trial of the grid (strategies "
                              f"{','.join(strategies)}): drop it or add the free strategy")
        return
    unused = []
    if "free" not in strategies:
        unused += [name for name, value in (("--noise", args.noise), ("--duration", args.duration),
                                            ("--noise-policy", args.noise_policy))
                   if value is not None]
    if all(strategy == "free" for strategy in strategies) and args.executions is not None:
        unused.append("--executions")
    if unused:
        raise ConfigError(f"{', '.join(unused)} would apply to no trial of the grid (strategies "
                          f"{','.join(strategies)}): drop {'it' if len(unused) == 1 else 'them'}"
                          " or add a strategy that uses it")


def _grid_from_args(args: argparse.Namespace) -> GridSpec:
    params = no_repeats("--param", args.param or [])
    strategies = (tuple(m for text in args.strategy for m in _split(text)) if args.strategy
                  else DEFAULT_STRATEGIES)
    _refuse_options_of_absent_modes(args, strategies)
    shard = Shard.parse(args.shard) if args.shard is not None else WHOLE
    if not shard.whole and (args.seed is None or args.campaign_id is None):
        raise ConfigError(f"--shard {shard} needs --seed and --campaign-id, the same for every "
                          "shard, so that all shards expand one grid with one set of seeds")
    if args.campaign_id is not None and not args.campaign_id.strip():
        raise ConfigError("--campaign-id must not be empty")
    return GridSpec(
        scenarios=named_scenarios(args.scenarios),
        origin=str(Path.cwd()),
        campaign=args.campaign_id or new_campaign_id(),
        seed=args.seed if args.seed is not None else secrets.randbelow(2**32),
        tracker=args.tracker or DEFAULT_TRACKER,
        variants=tuple(v for text in args.variant or [] for v in _split(text)),
        workers=_worker_grid(args),
        noises=args.noise if args.noise is not None else DEFAULT_NOISES,
        strategies=strategies,
        trials=args.trials if args.trials is not None else DEFAULT_TRIALS,
        duration=args.duration if args.duration is not None else DEFAULT_DURATION_S,
        executions=args.executions if args.executions is not None else DEFAULT_EXECUTIONS,
        params=params,
        expect_clean=tuple(v for text in args.expect_clean or [] for v in _split(text)),
        noise_policy=args.noise_policy or NoiseConfig().policy,
        shard=shard,
    )


def _given_grid_options(args: argparse.Namespace) -> list[str]:
    given = []
    for name in _GRID_OPTIONS:
        value = getattr(args, name)
        if value not in (None, []):
            given.append("FILE:function" if name == "scenarios" else
                         "--" + name.replace("_", "-"))
    return given


def _cmd_campaign(args: argparse.Namespace) -> int:
    out_dir: Path = args.out
    if not (args.heartbeat > 0 and math.isfinite(args.heartbeat)):
        raise ConfigError(f"--heartbeat must be a finite number > 0 of seconds, "
                          f"got {args.heartbeat:g}")
    require_writable(out_dir, "the campaign directory --out", directory=True)
    if args.resume:
        given = _given_grid_options(args)
        if given:
            raise ConfigError(
                f"--resume continues the grid saved in {out_dir}; drop {', '.join(given)}"
            )
        spec = resume_spec(out_dir)
    else:
        spec = _grid_from_args(args)
        if args.campaign_id is not None:
            _refuse_a_recorded_id(spec.campaign, out_dir / RESULTS_FILE)
    if args.tx:
        if args.resume:
            raise ConfigError("--resume is for local campaigns; rerun a distributed one instead")
        return _distributed(prepare(spec), out_dir, args.tx)
    summary = run_campaign(
        spec, out_dir, progress_enabled=not args.quiet, heartbeat_s=args.heartbeat,
        learning=learning_from_args(args),
    )
    return _report_summary(summary, out_dir)


def _refuse_a_recorded_id(campaign: str, results: Path) -> None:
    """A new campaign under an ID the results already hold would take their trials for its
    own (a nightly that names every night ``nightly`` would run nothing after the first)."""
    if any(campaign_outcomes(campaign, ResultsFile(results).records()).values()):
        raise ConfigError(f"--campaign-id {campaign}: {results} already holds trials of that "
                          "campaign; give each campaign its own ID, or finish that one with "
                          "--resume")


def _distributed(spec: GridSpec, out_dir: Path, gateways: list[str]) -> int:
    from shmstress.campaign.distributed import run_distributed

    save_spec(spec, out_dir)
    code = run_distributed(spec, out_dir, gateways)
    results = ResultsFile(out_dir / RESULTS_FILE)
    counts = campaign_outcomes(spec.campaign, results.records())
    _warn(results.warnings)
    recorded, expected = sum(counts.values()), len(expand(spec))
    shard = "" if spec.shard.whole else f" shard {spec.shard}"
    print(
        f"campaign {spec.campaign}{shard}: {recorded}/{expected} trials over "
        f"{counted(len(gateways), 'gateway')} in {results.path} ({_outcomes(counts)})"
    )
    print(f"  report: {out_dir / 'index.html'}")
    if code == ExitReason.INTERRUPTED.exit_code:
        print("shmstress: distributed campaign interrupted; the finished trials are recorded",
              file=sys.stderr)
        return code
    if recorded < expected:
        print(
            f"shmstress: only {recorded} of the campaign's {expected} trials reached "
            f"{results.path}; see the pytest output above",
            file=sys.stderr,
        )
        return INCOMPLETE_EXIT
    return code


def _warn(warnings: Sequence[str]) -> None:
    """Results lines skipped, bundles adopted: said the same way by campaign and report."""
    for warning in warnings:
        print(f"shmstress: warning: {warning}", file=sys.stderr)


def _outcomes(counts: dict[str, int]) -> str:
    return ", ".join(f"{counts.get(k, 0)} {k}" for k in ("violation", "clean", "error"))


def _report_summary(summary: CampaignSummary, out_dir: Path) -> int:
    spec = summary.spec
    _warn(summary.warnings)
    recorded = summary.already_done + summary.ran
    shard = "" if spec.shard.whole else f" shard {spec.shard}"
    print(
        f"campaign {spec.campaign}{shard}: {recorded}/{summary.total} trials in "
        f"{summary.results} (this run: {_outcomes(summary.outcomes)})"
    )
    if summary.already_done:
        were = "was" if summary.already_done == 1 else "were"
        print(f"  {counted(summary.already_done, 'trial')} {were} already recorded before this run")
    if summary.repaired is not None:
        print(
            f"  removed a partial last line ({summary.repaired.removed_bytes} bytes) "
            "left by a kill",
            file=sys.stderr,
        )
    if summary.bundles:
        bundles = out_dir / campaign_bundle_dir(spec.campaign)
        print(f"  {counted(summary.bundles, 'repro bundle')} in {bundles}")
    if summary.interrupted:
        print(
            f"shmstress: campaign interrupted with {counted(summary.remaining, 'trial')} left; "
            f"finish it with: shmstress campaign --out {out_dir} --resume",
            file=sys.stderr,
        )
        return ExitReason.INTERRUPTED.exit_code
    if summary.disk_error is not None:
        print(
            f"shmstress: error: {summary.disk_error}; the campaign stopped with "
            f"{counted(summary.remaining, 'trial')} left (free some space, then: shmstress "
            f"campaign --out {out_dir} --resume)",
            file=sys.stderr,
        )
        return 1 if summary.unexpected_violations else int(ExitCode.BROKEN)
    if spec.shard.whole:
        print(f"  report: shmstress report {summary.results} -o {DEFAULT_REPORT_OUT}")
    else:
        print(f"  merge every shard's directory: shmstress merge MERGED {out_dir} ...")
    if summary.unexpected_violations:
        print(
            "shmstress: violations in variants expected to be clean: "
            + "; ".join(summary.unexpected_violations),
            file=sys.stderr,
        )
        return 1
    return 0


def _cmd_merge(args: argparse.Namespace) -> int:
    from shmstress.campaign.merge import merge

    require_writable(args.out, "the merged directory OUT", directory=True)
    summary = merge(args.out, list(args.dirs))
    _warn(summary.warnings)
    directories = "directory" if summary.sources == 1 else "directories"
    print(f"merged {summary.sources} campaign {directories} into {summary.results}: "
          f"{counted(summary.added, 'record')}, {counted(summary.artifacts, 'file')} "
          "(bundles, swimlanes) copied")
    code = 0
    for tally in summary.campaigns:
        print(f"campaign {tally.spec.campaign}: {tally.recorded}/{tally.expected} trials "
              f"({_outcomes(tally.outcomes)})")
        if tally.missing:
            print(f"shmstress: campaign {tally.spec.campaign} misses "
                  f"{counted(tally.missing, 'trial')} (a shard that did not finish, or not "
                  f"merged); run them with: shmstress campaign --out {args.out} --resume",
                  file=sys.stderr)
            code = code or INCOMPLETE_EXIT
        if tally.unexpected_violations:
            print("shmstress: violations in variants expected to be clean: "
                  + "; ".join(tally.unexpected_violations), file=sys.stderr)
            code = 1
    print(f"  report: shmstress report {summary.results} -o {DEFAULT_REPORT_OUT}")
    return code


def _cmd_report(args: argparse.Namespace) -> int:
    from shmstress.reports.report import build_report, describe_report
    from shmstress.reports.results import ResultsFormatError

    files = [results / RESULTS_FILE if results.is_dir() else results
             for results in args.results]  # a campaign's directory: its results.jsonl
    for results in files:
        if not results.is_file():
            raise ConfigError(f"no such results file: {results}")
    require_writable(args.out, "the report directory -o", directory=True)
    try:
        summary = build_report(files, args.out)
    except FileNotFoundError as exc:
        raise ConfigError(f"no such results file: {exc.filename}") from None
    except ResultsFormatError as exc:
        raise ConfigError(str(exc)) from None
    except OSError as exc:
        raise ConfigError(f"cannot write the report into {args.out}: "
                          f"{exc.strerror or exc}") from None
    _warn(summary.warnings)
    print(describe_report(summary))
    return 0


def register(sub: Any) -> None:
    campaign = add_command(
        sub, "campaign",
        description="Run variant x worker counts x strategy x noise (or, given plain-code "
        "scenarios, scenario x strategy x noise), each for --trials trials, and append one "
        "JSON line per finished trial to OUT/results.jsonl (fsynced: a killed campaign "
        "loses at most the trial in flight; --resume finishes it); a failing trial "
        "writes its repro bundle into OUT/bundles/. Exit codes: 0 done, 1 a variant named by "
        "--expect-clean saw a violation (or, with --tx, a trial failed), 2 usage or "
        f"configuration error, {INCOMPLETE_EXIT} with --tx: trials missing from the results "
        "or a pytest internal error, 130 interrupted.",
        **with_examples(
            "shmstress campaign   # the default grid: about 3 minutes on 2 cores",
            "shmstress campaign --out night --expect-clean fixed,single-lock   # nightly alarm",
            "shmstress campaign --out night --resume   # finish one a signal or a kill cut",
            "shmstress campaign --tracker examples/counter_tracker.py:TicketTracker "
            "--workers clerk=2,4 --strategy free,pct --trials 20",
            "shmstress campaign --out night --tx socket=host-a:8888 --tx socket=host-b:8888",
            "shmstress campaign examples/plain/counter.py:racy examples/plain/counter.py:locked "
            "--out night --expect-clean locked",
            "shmstress campaign tests/ --out night   # every @concurrency_test under tests/",
            "shmstress campaign --out shard-2 --shard 2/4 --seed 7 --campaign-id nightly-1234"
            "   # one CI job of four",
        ),
    )
    campaign.add_argument("scenarios", nargs="*", metavar="FILE.py:FUNCTION|DIR",
                          help="plain-code scenarios to run instead of a tracker, as `shmstress "
                          "test` takes them (each trial explores --executions executions with "
                          "its strategy and seed; free ones too, with their noise); a directory:"
                          " every @concurrency_test function in the Python files under it")
    campaign.add_argument("--out", type=Path, default=DEFAULT_OUT, metavar="DIR",
                          help=f"campaign directory: campaign.json + results.jsonl "
                          f"(default {DEFAULT_OUT}; reuse it across nights to keep history)")
    add_database_option(campaign)
    campaign.add_argument("--resume", action="store_true",
                          help="finish the campaign last started in --out (same grid and seeds)")
    grid = campaign.add_argument_group(
        "grid (defaults: every variant of the tracker, the worker counts its roles ask a "
        "campaign to try, strategies "
        f"{','.join(DEFAULT_STRATEGIES)}, noise 0.1 and 0, {DEFAULT_TRIALS} trials, "
        f"{DEFAULT_DURATION_S:g} s or {DEFAULT_EXECUTIONS} executions)")
    grid.add_argument("--tracker", help="installed tracker name or file.py:Class (default dra)")
    grid.add_argument("--variant", action="append", metavar="V[,V]",
                      help="variants to run (repeatable; default all)")
    grid.add_argument("--workers", type=_role_counts, action="append", default=[],
                      metavar="ROLE=N[,N]", help="worker counts to try for a role "
                      "(repeatable; every combination runs)")
    grid.add_argument("--noise", type=_float_list, metavar="P[,P]",
                      help="noise probabilities to try (default 0.1,0)")
    grid.add_argument("--noise-policy", choices=NOISE_POLICIES, default=None,
                      help="noise policy of every free trial (default "
                      f"{NoiseConfig().policy}); aimed: delay at near-miss pairs, starting "
                      "from what earlier trials of the configuration learnt (--database); a "
                      "policy other than uniform is named in the configuration's key")
    grid.add_argument("--strategy", action="append", metavar="S[,S]",
                      help=f"what drives the interleavings, among {', '.join(STRATEGIES)}: free "
                      "runs workers in parallel with each --noise; the others are controlled "
                      "mode's strategies (one worker at a time, no noise) "
                      f"(default {','.join(DEFAULT_STRATEGIES)})")
    grid.add_argument("--trials", type=int, metavar="N",
                      help=f"trials per configuration (default {DEFAULT_TRIALS})")
    grid.add_argument("--duration", type=float, metavar="S",
                      help="seconds a free trial may run before it counts as clean "
                      f"(default {DEFAULT_DURATION_S:g})")
    grid.add_argument("--executions", type=int, metavar="N",
                      help="executions a controlled trial may try before it counts as clean "
                      f"(default {DEFAULT_EXECUTIONS})")
    grid.add_argument("--param", type=key_value, action="append", metavar="NAME=VALUE",
                      help="any tracker parameter, fixed for the whole grid")
    grid.add_argument("--seed", type=int, help="base seed; each trial's seed derives from it")
    grid.add_argument("--expect-clean", action="append", metavar="V[,V]",
                      help="variants that must never fail: exit 1 if one does (nightly alarm)")
    campaign.add_argument("--tx", action="append", metavar="SPEC", type=gateway,
                          help="spread trials over pytest-xdist gateways instead of running "
                          "locally, e.g. socket=host:8888, ssh=user@host//python=python3, "
                          "popen (repeatable; see docs/how-to/shard-nightly.md)")
    grid.add_argument("--shard", metavar="I/N",
                      help="run only shard I of N (1 <= I <= N): the I-th of N contiguous "
                      "blocks of the grid's trials, each with the seed the whole campaign "
                      "gives it; needs --seed and --campaign-id, the same in every shard "
                      "(merge the N directories with shmstress merge)")
    grid.add_argument("--campaign-id", metavar="ID",
                      help="the campaign's ID in every record (default: the start time and a "
                      "random suffix); one per campaign, e.g. nightly-$GITHUB_RUN_ID")
    campaign.add_argument("--quiet", action="store_true", help="no progress bar or heartbeat")
    campaign.add_argument("--heartbeat", type=float, default=30.0, metavar="S",
                          help="seconds between progress lines when stderr is not a terminal "
                          "(default 30)")
    campaign.set_defaults(handler=_cmd_campaign)

    merge = add_command(
        sub, "merge",
        description="Gather the records of campaign directories (the shards of one campaign, "
        "or campaigns run one per host) into OUT/results.jsonl, after the history it holds, "
        "with the bundles and swimlanes they name; a sharded campaign's grid is saved in OUT "
        "whole, so --resume runs the trials no shard recorded. A record met twice, or two "
        "records of one trial, is refused before anything is written. Exit codes: 0 merged, "
        "1 a variant named by --expect-clean saw a violation, 2 usage error or conflicting "
        f"records, {INCOMPLETE_EXIT} trials of a campaign missing.",
        **with_examples(
            "shmstress merge night shard-1 shard-2 shard-3 shard-4",
            "shmstress merge history night-*/   # keep every night in one results.jsonl",
        ),
    )
    merge.add_argument("out", type=Path, metavar="OUT", help="directory to merge into")
    merge.add_argument("dirs", nargs="+", type=Path, metavar="DIR",
                       help="campaign directories (each with results.jsonl, campaign.json)")
    merge.set_defaults(handler=_cmd_merge)

    report = add_command(
        sub, "report",
        description="Failure rate per configuration (95%% Wilson intervals), time-to-detection "
        "CDF per strategy, the trend across campaigns, and each distinct failure with its log "
        "snippet, explanation and replay command.",
        **with_examples(
            "shmstress report shmstress-out/campaign/results.jsonl -o shmstress-out/report",
            "shmstress report shmstress-out/campaign -o shmstress-out/report   # its directory",
            "shmstress report a/results.jsonl b/results.jsonl -o trend   # several histories",
        ),
    )
    report.add_argument("results", nargs="+", type=Path, metavar="RESULTS",
                        help="results.jsonl file(s), or the directories holding them "
                        "(a campaign's --out, pytest's --stress-report); several campaigns "
                        "make the trend")
    report.add_argument("-o", "--out", type=Path, default=DEFAULT_REPORT_OUT, metavar="DIR",
                        help=f"output directory (default {DEFAULT_REPORT_OUT})")
    report.set_defaults(handler=_cmd_report)
