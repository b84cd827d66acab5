"""``python -m reports RESULTS.jsonl... -o OUT_DIR``: rebuild a report by hand.

The harness CLI is the normal entry point; this exists so a report can be regenerated
from archived result files without the rest of the harness being importable.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from shmstress.reports.report import build_report, describe_report
from shmstress.reports.results import ResultsFormatError


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports", description=__doc__)
    parser.add_argument("results", nargs="+", type=Path, help="results.jsonl file(s)")
    parser.add_argument("-o", "--out", type=Path, default=Path("report"), help="output dir")
    args = parser.parse_args(argv)
    try:
        summary = build_report(args.results, args.out)
    except (OSError, ResultsFormatError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for warning in summary.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(describe_report(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
