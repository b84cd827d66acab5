"""Tests for the read-only campaign report renderer (reports/)."""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import pytest
from hypothesis import given
from hypothesis import strategies as st

from shmstress.campaign.grid import new_campaign_id
from shmstress.reports import (
    ResultsFormatError,
    detection_curves,
    group_by_config,
    group_failures,
    load_results,
    load_results_file,
    parse_trial,
    trend_by_variant,
    wilson_interval,
)
from shmstress.reports.report import build_report
from shmstress.reports.results import UnknownSchemaError
from shmstress.reports.schema import SCHEMA_VERSION, decode, workers_label

FIXTURE = Path(__file__).parent / "fixtures" / "reports" / "results-v1.jsonl"
"""Two real campaigns as the release before results schema 2 wrote them, kept as they are:
the compatibility fixture (tests here turn its records into schema 2 where they need it)."""
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
Z95 = 1.959963984540054


# ----------------------------------------------------------------------------- helpers


def _trial(**overrides: Any) -> dict[str, Any]:
    """A valid clean trial line of the current schema; overrides replace top-level keys."""
    record: dict[str, Any] = {
        "schema": SCHEMA_VERSION,
        "campaign": "2026-11-22T08:00:00Z-ab12",
        "started_at": "2026-11-22T08:00:01Z",
        "trial": 0,
        "tracker": "dra",
        "variant": "gather-unchecked",
        "config": {
            "workers": {"binder": 2, "informer": 1, "gatherer": 1},
            "params": {"nodes": 2, "devices-per-node": 4},
            "noise": 0.1,
            "mode": "free",
            "strategy": "noise",
            "duration": 2.0,
            "executions": None,
        },
        "config_key": "dra/gather-unchecked b2 i1 g1 free/noise p=0.1",
        "seed": 123,
        "outcome": "clean",
        "exit_reason": "duration",
        "time_to_violation_s": None,
        "points_to_violation": None,
        "points": 10000,
        "points_per_s": 80000.0,
        "elapsed_s": 2.0,
        "violation": None,
        "bundle": None,
        "log_snippet": None,
        "explanation": None,
        "replay_command": None,
        "rerun_command": None,
    }
    record.update(overrides)
    return record


def _violation(
    message: str, invariant: str = "gather-complete", **overrides: Any
) -> dict[str, Any]:
    bundle = overrides.pop("bundle", "out/bundles/x.json")
    fields: dict[str, Any] = {
        "outcome": "violation",
        "exit_reason": "violation",
        "time_to_violation_s": 0.12,
        "points_to_violation": 3456,
        "violation": {"invariant": invariant, "message": message},
        "bundle": bundle,
        "log_snippet": "line 1\nline 2",
        "explanation": "why\nbecause",
        "replay_command": f"shmstress replay {bundle}",
        "rerun_command": "shmstress run --tracker dra --variant gather-unchecked --seed 123",
    }
    return _trial(**{**fields, **overrides})


def _write_jsonl(path: Path, records: list[dict[str, Any]], tail: str = "") -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + tail, encoding="utf-8")
    return path


def _fixture_records() -> list[dict[str, Any]]:
    return [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]


def _wilson_by_bisection(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Independent Wilson bounds: roots of (k/n - p)^2 = z^2 p (1 - p) / n, found numerically."""
    p_hat = k / n

    def g(p: float) -> float:
        return (p_hat - p) ** 2 - z * z * p * (1 - p) / n

    def root(a: float, b: float) -> float:
        for _ in range(200):
            mid = (a + b) / 2
            if (g(a) <= 0) == (g(mid) <= 0):
                a = mid
            else:
                b = mid
        return (a + b) / 2

    low = 0.0 if k == 0 else root(0.0, p_hat)
    high = 1.0 if k == n else root(p_hat, 1.0)
    return low, high


class _PageParser(HTMLParser):
    """Checks tag nesting and collects the bits of the page the tests look at."""

    VOID = frozenset({"meta", "img", "br", "hr", "link", "input", "col", "source", "wbr"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.tags: list[str] = []
        self.images: list[dict[str, str | None]] = []
        self.tables: list[list[list[str]]] = []
        self.codes: list[str] = []
        self.pres: list[str] = []
        self.sections = 0
        self._cell: list[str] | None = None
        self._row: list[str] | None = None
        self._code: list[str] | None = None
        self._pre: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "img":
            self.images.append(dict(attrs))
        if tag == "section":
            self.sections += 1
        if tag == "table":
            self.tables.append([])
        if tag == "tr":
            self._row = []
        if tag in {"td", "th"}:
            self._cell = []
        if tag == "code":
            self._code = []
        if tag == "pre":
            self._pre = []
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in self.VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:]} at {self.getpos()}")
            return
        self.stack.pop()
        if tag in {"td", "th"} and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        if tag == "tr" and self._row is not None:
            self.tables[-1].append(self._row)
            self._row = None
        if tag == "code" and self._code is not None:
            self.codes.append("".join(self._code))
            self._code = None
        if tag == "pre" and self._pre is not None:
            self.pres.append("".join(self._pre))
            self._pre = None

    @property
    def config_rows(self) -> list[list[str]]:
        """Rows of the configuration table (the first table on the page), header first."""
        return self.tables[0]

    def handle_data(self, data: str) -> None:
        for sink in (self._cell, self._code, self._pre):
            if sink is not None:
                sink.append(data)


def _parse_page(path: Path) -> _PageParser:
    parser = _PageParser()
    parser.feed(path.read_text(encoding="utf-8"))
    parser.close()
    assert not parser.errors, parser.errors
    assert parser.stack == [], f"unclosed tags: {parser.stack}"
    return parser


@pytest.fixture(scope="module")
def fixture_report(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Path]]:
    out = tmp_path_factory.mktemp("report")
    yield build_report([FIXTURE], out), out


# ----------------------------------------------------------------------------- wilson


@pytest.mark.parametrize(
    ("k", "n", "expected"),
    [
        (0, 10, (0.0, 0.2775)),
        (5, 10, (0.2366, 0.7634)),
        (10, 10, (0.7225, 1.0)),
        (1, 100, (0.00177, 0.0545)),
    ],
)
def test_wilson_known_values(k: int, n: int, expected: tuple[float, float]) -> None:
    low, high = wilson_interval(k, n)
    assert low == pytest.approx(expected[0], abs=1e-3)
    assert high == pytest.approx(expected[1], abs=1e-3)


def test_wilson_extremes_are_exact() -> None:
    assert wilson_interval(0, 10)[0] == 0.0
    assert wilson_interval(10, 10)[1] == 1.0
    assert wilson_interval(0, 0) == (0.0, 1.0)


@given(
    st.integers(min_value=1, max_value=2000).flatmap(
        lambda n: st.tuples(st.integers(min_value=0, max_value=n), st.just(n))
    )
)
def test_wilson_matches_independent_root_finding(kn: tuple[int, int]) -> None:
    k, n = kn
    low, high = wilson_interval(k, n)
    ref_low, ref_high = _wilson_by_bisection(k, n)
    assert low == pytest.approx(ref_low, abs=1e-9)
    assert high == pytest.approx(ref_high, abs=1e-9)
    assert 0.0 <= low <= k / n <= high <= 1.0
    # Swapping successes and failures mirrors the interval.
    mirror_low, mirror_high = wilson_interval(n - k, n)
    assert mirror_low == pytest.approx(1 - high, abs=1e-12)
    assert mirror_high == pytest.approx(1 - low, abs=1e-12)


def test_wilson_other_z_is_narrower() -> None:
    low90, high90 = wilson_interval(5, 10, z=1.6448536269514722)
    low95, high95 = wilson_interval(5, 10)
    assert low95 < low90 < 0.5 < high90 < high95


@pytest.mark.parametrize(("k", "n"), [(-1, 10), (0, -1), (11, 10), (1, 0)])
def test_wilson_rejects_impossible_counts(k: int, n: int) -> None:
    with pytest.raises(ValueError):
        wilson_interval(k, n)


@pytest.mark.parametrize("z", [0.0, -1.0, math.nan, math.inf])
def test_wilson_rejects_bad_z(z: float) -> None:
    with pytest.raises(ValueError):
        wilson_interval(1, 2, z=z)


def test_wilson_rejects_non_integer_counts() -> None:
    with pytest.raises(TypeError):
        wilson_interval(1.0, 2)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        wilson_interval(True, 2)


# ----------------------------------------------------------------------------- parsing


def test_parse_good_file_tolerates_unknown_keys(tmp_path: Path) -> None:
    extra = _trial(host="ci-3", future_field={"nested": [1, 2]})
    extra["config"] = {**extra["config"], "new_knob": 7}
    path = _write_jsonl(tmp_path / "results.jsonl", [_trial(), _violation("boom\ndetail"), extra])
    loaded = load_results_file(path)
    assert loaded.skipped_lines == 0
    assert loaded.warnings == ()
    assert [t.outcome for t in loaded.trials] == ["clean", "violation", "clean"]
    bad = loaded.trials[1]
    assert bad.config.workers == (("binder", 2), ("informer", 1), ("gatherer", 1))
    assert (bad.config.worker_count, bad.config.workers_label) == (4, "b2 i1 g1")
    assert bad.config.params == (("nodes", 2), ("devices-per-node", 4))
    assert bad.config.strategy == "free"  # written as "noise": free mode has one name now
    assert bad.config_key == "dra/gather-unchecked b2 i1 g1 free p=0.1"
    assert bad.violation is not None
    assert bad.violation.first_line == "boom"
    assert bad.time_to_violation_s == pytest.approx(0.12)
    assert bad.replay_command == "shmstress replay out/bundles/x.json"
    assert (bad.source, bad.line) == (path, 2)


def test_parse_fixture() -> None:
    loaded = load_results([FIXTURE])
    records = _fixture_records()
    assert len(loaded.trials) == len(records)
    assert loaded.skipped_lines == 0
    assert {t.campaign for t in loaded.trials} == {r["campaign"] for r in records}
    # The fixture is a real campaign's output: both modes, every strategy. It names free
    # mode "noise" and "no-noise", read as free with the noise as its parameter.
    assert {(t.config.mode, t.config.strategy) for t in loaded.trials} == {
        ("free", "free"), ("controlled", "pct"), ("controlled", "random_walk"),
    }
    assert {t.config.drive for t in loaded.trials if t.config.mode == "free"} == {
        "free p=0.1", "free p=0"}


def test_malformed_middle_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    lines = [json.dumps(_trial()), '{"campaign": "x", oops', json.dumps(_trial())]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ResultsFormatError) as info:
        load_results_file(path, strict=True)
    assert info.value.line == 2
    assert f"{path}:2:" in str(info.value)
    assert isinstance(info.value, ValueError)
    # By default the line is skipped, named and counted: it never blocks a report.
    loaded = load_results_file(path)
    assert (len(loaded.trials), loaded.skipped_lines) == (2, 1)
    assert loaded.warnings[0].startswith(f"{path}:2: skipped a corrupt line (invalid JSON")


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda r: r.pop("config_key"), "config_key"),
        (lambda r: r.update(outcome="maybe"), "outcome"),
        (lambda r: r["config"]["workers"].update(informer="two"), "config.workers.informer"),
        (lambda r: r["config"]["workers"].update(binder=True), "config.workers.binder"),
        (lambda r: r["config"]["workers"].update(binder=-1), "config.workers.binder"),
        (lambda r: r["config"].pop("workers"), "missing required field config.workers"),
        (lambda r: r["config"]["params"].update(nodes=2.5), "config.params.nodes"),
        (lambda r: r["config"].update(noise=math.inf), "config.noise"),
        (lambda r: r.update(time_to_violation_s=-1.0), "time_to_violation_s"),
        (lambda r: r.update(violation="nope"), "violation"),
    ],
)
def test_bad_field_is_an_error_even_on_last_line(tmp_path: Path, mutate: Any, needle: str) -> None:
    # A complete but wrong record is not a truncated write, so it is never skipped.
    broken = _trial()
    mutate(broken)
    path = _write_jsonl(tmp_path / "results.jsonl", [_trial(), broken])
    with pytest.raises(ResultsFormatError, match=needle) as info:
        load_results_file(path, strict=True)
    assert info.value.line == 2
    loaded = load_results_file(path)  # by default: skipped, named with the field, counted
    assert (len(loaded.trials), loaded.skipped_lines) == (1, 1)
    assert loaded.warnings[0].startswith(f"{path}:2: skipped a corrupt line (")
    assert needle.rsplit(maxsplit=1)[-1] in loaded.warnings[0]


def test_non_object_line_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text('[1, 2]\n{"a": 1}\n', encoding="utf-8")
    with pytest.raises(ResultsFormatError, match=r":1: expected a JSON object"):
        load_results_file(path, strict=True)


def test_truncated_last_line_is_skipped_and_counted(tmp_path: Path) -> None:
    full = json.dumps(_violation("boom"))
    path = _write_jsonl(tmp_path / "results.jsonl", [_trial(), _trial(trial=1)],
                        tail=full[:57])
    loaded = load_results_file(path)
    assert len(loaded.trials) == 2
    assert loaded.skipped_lines == 1
    assert len(loaded.warnings) == 1
    assert f"{path}:3" in loaded.warnings[0]

    summary = build_report([path], tmp_path / "out")
    assert summary.n_skipped_lines == 1
    assert summary.n_trials == 2
    page = summary.index_html.read_text(encoding="utf-8")
    assert "truncated" in page


def test_truncated_multibyte_last_line_is_skipped(tmp_path: Path) -> None:
    partial = json.dumps(_violation("caf\u00e9 \u2014 broke"), ensure_ascii=False).encode()
    cut = partial[: partial.index("\u2014".encode()) + 1]  # mid-character
    path = tmp_path / "results.jsonl"
    path.write_bytes((json.dumps(_trial()) + "\n").encode() + cut)
    loaded = load_results_file(path)
    assert (len(loaded.trials), loaded.skipped_lines) == (1, 1)


def test_blank_lines_are_ignored(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text(f"{json.dumps(_trial())}\n\n   \n{json.dumps(_trial())}\n\n", encoding="utf-8")
    loaded = load_results_file(path)
    assert (len(loaded.trials), loaded.skipped_lines) == (2, 0)


def test_same_file_twice_is_read_once(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "results.jsonl", [_trial(), _trial(trial=1)])
    assert len(load_results([path, tmp_path / "." / "results.jsonl"]).trials) == 2


# ----------------------------------------------------------------------------- schema versions


_GENERIC_CONFIG = ("noise", "mode", "strategy", "duration", "executions")


def _as_v2(record: dict[str, Any]) -> dict[str, Any]:
    """A schema-1 fixture record as the current harness writes it."""
    config = record["config"]
    return {
        "schema": 2,
        **{k: v for k, v in record.items() if k != "config"},
        "config": {
            "workers": config["roles"],
            "params": config["params"],
            **{k: config[k] for k in _GENERIC_CONFIG},
        },
    }


def _aggregates(trials: Any) -> tuple[Any, ...]:
    """Everything the report shows that does not depend on where a line was read."""
    failures = [
        (g.tracker, g.variant, g.invariant, g.message_first_line, g.count, g.config_counts,
         g.campaigns)
        for g in group_failures(trials)
    ]
    return (
        group_by_config(trials), failures, trend_by_variant(trials), detection_curves(trials)
    )


def _one_trial(record: dict[str, Any], tmp_path: Path) -> Any:
    (trial,) = load_results_file(_write_jsonl(tmp_path / "one.jsonl", [record]),
                                 strict=True).trials
    return trial


def test_the_fixture_is_schema_1_and_its_workers_are_its_roles() -> None:
    records = _fixture_records()
    assert all("schema" not in r and "roles" in r["config"] for r in records)
    trials = load_results([FIXTURE]).trials
    for record, trial in zip(records, trials, strict=True):
        assert trial.config.workers == tuple(record["config"]["roles"].items())
        assert trial.config.params == tuple(record["config"]["params"].items())
        assert trial.config.workers_label in trial.config_key


def test_schema_1_and_2_mixed_in_one_file_give_the_same_aggregates(tmp_path: Path) -> None:
    records = _fixture_records()
    as_v2 = [_as_v2(r) for r in records]
    mixed = [v2 if i % 2 else v1 for i, (v1, v2) in enumerate(zip(records, as_v2, strict=True))]
    loaded = {
        name: load_results_file(_write_jsonl(tmp_path / f"{name}.jsonl", lines))
        for name, lines in (("v1", records), ("v2", as_v2), ("mixed", mixed))
    }
    assert all(not got.warnings and got.skipped_lines == 0 for got in loaded.values())
    configs = {name: [t.config for t in got.trials] for name, got in loaded.items()}
    assert configs["v1"] == configs["v2"] == configs["mixed"]
    assert _aggregates(loaded["v1"].trials) == _aggregates(loaded["v2"].trials)
    assert _aggregates(loaded["v1"].trials) == _aggregates(loaded["mixed"].trials)
    summary = build_report([tmp_path / "mixed.jsonl"], tmp_path / "out")
    assert (summary.n_trials, summary.warnings) == (len(records), ())


def test_schema_2_records_decode_to_what_was_written() -> None:
    for record in (_trial(), _violation("boom\ndetail")):
        decoded = decode(record)
        assert decoded.schema == SCHEMA_VERSION
        assert decoded.config.workers == record["config"]["workers"]
        assert decoded.config.params == record["config"]["params"]


def test_a_schema_1_record_without_roles_is_refused_naming_the_field(tmp_path: Path) -> None:
    record = _fixture_records()[0]
    config = {k: v for k, v in record["config"].items() if k != "roles"}
    with pytest.raises(ResultsFormatError, match=r":1: missing required field config\.roles"):
        _one_trial({**record, "config": config}, tmp_path)


@pytest.mark.parametrize("version", [3, "2", None, 2.0, True])
def test_a_record_of_an_unknown_schema_is_skipped_with_a_warning(
    tmp_path: Path, version: object
) -> None:
    unknown = {**_trial(), "schema": version, "config": {"whatever": [1]}}
    records = [_trial(), unknown, _fixture_records()[0], _violation("x")]
    path = _write_jsonl(tmp_path / "results.jsonl", records)
    loaded = load_results_file(path)
    assert len(loaded.trials) == 3 and loaded.skipped_lines == 1
    (warning,) = loaded.warnings
    assert warning.startswith(f"{path}:2: skipped a record of results schema {version!r};")
    summary = build_report([path], tmp_path / "out")  # never blocks the report
    assert summary.n_trials == 3
    page = summary.index_html.read_text(encoding="utf-8")
    assert html.escape(f"results schema {version!r}") in page
    with pytest.raises(UnknownSchemaError, match=r":2: results schema"):
        parse_trial(unknown, path, 2)


def test_workers_are_labelled_as_the_config_key_names_them() -> None:
    assert workers_label((("binder", 2), ("informer", 1), ("gatherer", 1))) == "b2 i1 g1"
    assert workers_label((("alpha", 2), ("apple", 1))) == "alpha=2 apple=1"
    assert workers_label(()) == ""


def test_a_variants_mixes_of_as_many_workers_get_their_own_groups(tmp_path: Path) -> None:
    from shmstress.reports.plots import _layout_rows

    def mix(workers: dict[str, int]) -> dict[str, Any]:
        label = workers_label(tuple(workers.items()))
        return _trial(
            config={**_trial()["config"], "workers": workers},
            config_key=f"dra/gather-unchecked {label} free/noise p=0.1",
        )

    records = [mix({"binder": 2, "informer": 1}), mix({"binder": 1, "informer": 2}),
               mix({"binder": 2, "informer": 2})]
    stats = group_by_config(load_results_file(_write_jsonl(tmp_path / "r.jsonl", records)).trials)
    (row,) = _layout_rows(stats)
    assert [title for title, _ in row.groups] == [
        "3 workers: b1 i2", "3 workers: b2 i1", "4 workers"
    ]


# ----------------------------------------------------------------------------- aggregation


def test_config_stats_counts_and_times(tmp_path: Path) -> None:
    records = [
        _violation("a", time_to_violation_s=0.5),
        _violation("a", time_to_violation_s=0.1),
        _violation("a", time_to_violation_s=0.3),
        _trial(),
        _trial(outcome="error", exit_reason="worker-crashed"),
    ]
    loaded = load_results_file(_write_jsonl(tmp_path / "r.jsonl", records))
    (stat,) = group_by_config(loaded.trials)
    assert (stat.trials, stat.failures, stat.errors) == (4, 3, 1)
    assert stat.rate == pytest.approx(0.75)
    assert (stat.wilson_low, stat.wilson_high) == pytest.approx(_wilson_by_bisection(3, 4))
    assert stat.median_time_to_violation_s == pytest.approx(0.3)
    assert stat.max_time_to_violation_s == pytest.approx(0.5)
    assert (stat.worker_count, stat.strategy, stat.noise) == (4, "free", 0.1)
    assert stat.workers == (("binder", 2), ("informer", 1), ("gatherer", 1))


def test_failures_grouped_by_variant_invariant_and_where_not_by_text(tmp_path: Path) -> None:
    at_rest = _violation("gather missed device", bundle="b6.json")
    at_rest["violation"]["at_rest"] = True
    records = [
        _violation("gather missed device\nnode=n1 d=1", bundle="b1.json", points_to_violation=900),
        _violation("gather missed device\nnode=n0 d=3", bundle="b2.json", points_to_violation=50),
        _violation("worded otherwise by another release", bundle="b3.json"),
        _violation("gather missed device", invariant="other", bundle="b4.json"),
        _violation("gather missed device", variant="bind-race", bundle="b5.json"),
        at_rest,
    ]
    loaded = load_results_file(_write_jsonl(tmp_path / "r.jsonl", records))
    groups = group_failures(loaded.trials)
    assert len(groups) == 4
    biggest = groups[0]
    assert (biggest.count, biggest.invariant, biggest.at_rest) == (3, "gather-complete", False)
    # The quickest reproduction is offered for replay, and names the group.
    assert biggest.representative.replay_command == "shmstress replay b2.json"
    assert biggest.message_first_line == "gather missed device"
    assert [(g.variant, g.invariant, g.at_rest) for g in groups[1:]] == [
        ("bind-race", "gather-complete", False),
        ("gather-unchecked", "gather-complete", True),
        ("gather-unchecked", "other", False),
    ]


def test_trend_orders_campaigns_by_start_time(tmp_path: Path) -> None:
    late, early = "2026-11-23T02:00:00Z-bbbb", "2026-11-21T02:00:00Z-zzzz"
    records = [
        _violation("x", campaign=late, started_at="2026-11-23T02:00:05Z"),
        _trial(campaign=late, started_at="2026-11-23T02:00:06Z"),
        _trial(campaign=early, started_at="2026-11-21T02:00:05Z"),
    ]
    loaded = load_results_file(_write_jsonl(tmp_path / "r.jsonl", records))
    trend = trend_by_variant(loaded.trials)
    points = trend["gather-unchecked"]
    assert [p.campaign for p in points] == [early, late]
    assert [p.rate for p in points] == [0.0, 0.5]


# ----------------------------------------------------------------------------- build_report


def test_interleaving_coverage_is_a_column_and_a_chart(tmp_path: Path) -> None:
    """Each configuration's trials' coverage (error trials and records without it left
    out) becomes its median and range in the table and dots in coverage.png."""
    fixed = "dra/fixed b2 i1 g1 free p=0.1"
    records = [
        *(_trial(trial=i, interleaving_coverage=c) for i, c in enumerate((9, 12, 30))),
        _trial(trial=3, outcome="error", exit_reason="worker-crashed", interleaving_coverage=99),
        _trial(variant="fixed", config_key=fixed, interleaving_coverage=None),
    ]
    results = _write_jsonl(tmp_path / "results.jsonl", records)
    stats = {s.variant: s for s in group_by_config(load_results_file(results).trials)}
    racy = stats["gather-unchecked"]
    assert sorted(racy.coverages) == [9, 12, 30] and racy.median_coverage == 12
    assert stats["fixed"].coverages == () and stats["fixed"].median_coverage is None
    summary = build_report([results], tmp_path / "report")
    page = summary.index_html.read_text(encoding="utf-8")
    assert "interleaving coverage" in page and "12 [9-30]" in page
    chart = tmp_path / "report" / "coverage.png"
    assert chart in summary.plots and chart.read_bytes()[:8] == PNG_MAGIC
    assert 'src="coverage.png"' in page
    assert plt.get_fignums() == [], "figures leaked"



def test_build_report_writes_pngs_and_html(fixture_report: tuple[Any, Path]) -> None:
    summary, out = fixture_report
    assert summary.n_trials == len(_fixture_records())
    assert summary.n_configs == len({r["config_key"] for r in _fixture_records()})
    assert summary.n_skipped_lines == 0
    assert [p.name for p in summary.plots] == [
        "failure_rate.png", "time_to_detection.png", "coverage.png", "trend.png"]
    for plot in summary.plots:
        assert plot.parent == out
        assert plot.read_bytes()[:8] == PNG_MAGIC
    assert summary.index_html == out / "index.html"
    assert set(summary.paths) == {summary.index_html, *summary.plots}
    assert plt.get_fignums() == [], "figures leaked"


def test_index_html_is_well_formed_and_self_contained(fixture_report: tuple[Any, Path]) -> None:
    summary, out = fixture_report
    page_text = summary.index_html.read_text(encoding="utf-8")
    page = _parse_page(summary.index_html)
    assert "h1" in page.tags
    assert "table" in page.tags
    assert "script" not in page.tags
    assert "link" not in page.tags
    assert "http://" not in page_text
    assert "https://" not in page_text
    assert len(page.images) == len(summary.plots) == 4
    for image in page.images:
        src = image.get("src")
        assert src
        assert not Path(src).is_absolute()
        assert (out / src).is_file()
        assert image.get("alt")
    header = page.config_rows[0]
    assert header[0] == "configuration"
    assert any("95%" in cell for cell in header)


def test_index_html_names_failures_and_replays(fixture_report: tuple[Any, Path]) -> None:
    summary, _ = fixture_report
    page_text = summary.index_html.read_text(encoding="utf-8")
    page = _parse_page(summary.index_html)
    records = _fixture_records()

    failing_keys = {  # the fixture's free mode under its old names, as the page names it
        re.sub(r" free/(no-)?noise ", " free ", r["config_key"])
        for r in records if r["outcome"] == "violation"}
    assert failing_keys
    table_keys = {row[0] for row in page.config_rows[1:]}
    assert failing_keys <= table_keys

    # Distinct failures computed independently from the raw lines.
    replays: dict[tuple[str, str, str], set[str]] = {}
    reruns: dict[tuple[str, str, str], set[str]] = {}
    for r in records:
        if r["outcome"] == "violation":
            first = r["violation"]["message"].splitlines()[0]
            key = (r["variant"], r["violation"]["invariant"], first)
            replays.setdefault(key, set()).add(r["replay_command"])
            reruns.setdefault(key, set()).add(r["rerun_command"])
    assert len(replays) >= 2
    assert page.sections == len(replays)
    codes = set(page.codes)
    for key, commands in replays.items():
        # The fixture keeps no bundles: the page names the recorded replay and the rerun.
        assert all(c.startswith("shmstress replay bundles/") for c in commands)
        assert commands & codes, f"no replay command shown for {key}"
        assert reruns[key] & codes, f"no seeded rerun shown for {key}"
        for part in key:
            assert part in page_text
    assert "was not found" in page_text


def test_clean_only_variant_shows_rate_zero(fixture_report: tuple[Any, Path]) -> None:
    summary, _ = fixture_report
    page = _parse_page(summary.index_html)
    correct_rows = [row for row in page.config_rows[1:] if row[0].startswith("dra/fixed ")]
    fixed_keys = {r["config_key"] for r in _fixture_records() if r["variant"] == "fixed"}
    assert len(correct_rows) == len(fixed_keys) > 1
    for row in correct_rows:
        trials, failures = int(row[1]), int(row[2])
        assert trials > 0
        assert failures == 0
        assert row[4].startswith("0.000 [0.000, ")
    stats = [s for s in group_by_config(load_results([FIXTURE]).trials) if s.variant == "fixed"]
    assert stats
    assert all(s.rate == 0.0 and s.wilson_low == 0.0 for s in stats)


def test_build_report_over_one_file_per_campaign(tmp_path: Path) -> None:
    by_campaign: dict[str, list[dict[str, Any]]] = {}
    for record in _fixture_records():
        by_campaign.setdefault(record["campaign"], []).append(record)
    assert len(by_campaign) == 2
    paths = [
        _write_jsonl(tmp_path / f"night{i}.jsonl", recs)
        for i, recs in enumerate(reversed(list(by_campaign.values())))
    ]
    summary = build_report(paths, tmp_path / "out")
    assert summary.n_trials == len(_fixture_records())
    trend = trend_by_variant(load_results(paths).trials)
    assert [p.campaign for p in trend["fixed"]] == sorted(by_campaign)


def test_html_escapes_hostile_text(tmp_path: Path) -> None:
    hostile = '<script>alert("x")</script> & <b>'
    record = _violation(f"{hostile}\nmore", variant="v<i>", log_snippet=hostile)
    record["explanation"] = hostile
    record["config_key"] = f"key {hostile}"
    record["replay_command"] = f"shmstress replay '{hostile}'"
    summary = build_report([_write_jsonl(tmp_path / "r.jsonl", [record])], tmp_path / "out")
    page_text = summary.index_html.read_text(encoding="utf-8")
    page = _parse_page(summary.index_html)
    assert "script" not in page.tags
    assert "<b>" not in page_text
    assert "&lt;script&gt;" in page_text
    assert record["replay_command"] in page.codes


def test_build_report_without_violations_or_trials(tmp_path: Path) -> None:
    clean = _write_jsonl(tmp_path / "clean.jsonl", [_trial(), _trial(trial=1)])
    summary = build_report([clean], tmp_path / "clean-out")
    assert summary.n_trials == 2
    assert all(p.read_bytes()[:8] == PNG_MAGIC for p in summary.plots)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    summary = build_report([empty], tmp_path / "empty-out")
    assert (summary.n_trials, summary.n_configs) == (0, 0)
    _parse_page(summary.index_html)
    assert plt.get_fignums() == []


def test_build_report_needs_input(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        build_report([], tmp_path)


# ----------------------------------------------------------------------------- detection, trend


def test_detection_curves_leave_out_variants_that_never_failed(tmp_path: Path) -> None:
    fast = {"config": {**_trial()["config"], "strategy": "pct", "mode": "controlled"}}
    records = [
        _violation("a", time_to_violation_s=0.2),
        _violation("a", time_to_violation_s=0.1),
        _trial(),  # the racy variant ran clean once: it counts against the strategy
        _trial(variant="fixed"),  # a correct variant gives no strategy anything to find
        _trial(variant="fixed"),
        _violation("a", time_to_violation_s=0.05, **fast),
        _trial(outcome="error", exit_reason="worker-crashed", **fast),  # no verdict
    ]
    trials = load_results_file(_write_jsonl(tmp_path / "r.jsonl", records)).trials
    curves = {c.strategy: c for c in detection_curves(trials)}
    assert set(curves) == {"free p=0.1", "pct"}  # free mode named so, with its noise
    free = curves["free p=0.1"]
    assert (free.times, free.trials, free.detections) == ((0.1, 0.2), 3, 2)
    assert free.rate == pytest.approx(2 / 3)
    assert (curves["pct"].times, curves["pct"].trials, curves["pct"].rate) == ((0.05,), 1, 1.0)


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC and data[12:16] == b"IHDR"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_trend_keeps_its_size_however_many_nights(tmp_path: Path) -> None:
    def nights(count: int) -> list[dict[str, Any]]:
        records = []
        for night in range(count):
            start = datetime(2026, 9, 1, 3, 17, tzinfo=UTC) + timedelta(days=night)
            campaign = new_campaign_id(start)
            started_at = start.isoformat()
            records += [
                _violation("x", campaign=campaign, started_at=started_at),
                _trial(campaign=campaign, started_at=started_at, variant="fixed"),
            ]
        return records

    sizes = []
    for count in (1, 60):
        path = _write_jsonl(tmp_path / f"{count}.jsonl", nights(count))
        sizes.append(_png_size(build_report([path], tmp_path / f"out{count}").plots[2]))
    (w1, h1), (w60, h60) = sizes
    assert abs(w60 - w1) <= 0.05 * w1 and abs(h60 - h1) <= 0.05 * h1


# ----------------------------------------------------------------------------- bundles


def test_report_copies_each_failures_bundle_and_replays_it_from_the_page(
    tmp_path: Path,
) -> None:
    campaign_dir = tmp_path / "night"
    bundle = "bundles/2026-11-22T080000Z-ab12/dra-gather-unchecked-free-seed7.json"
    (campaign_dir / bundle).parent.mkdir(parents=True)
    (campaign_dir / bundle).write_text('{"format": "shmstress-repro-bundle"}\n')
    records = [
        _violation("x\ndetail", bundle="bundles/gone.json", points_to_violation=10),
        _violation("x\nother", bundle=bundle, points_to_violation=900),
    ]
    results = _write_jsonl(campaign_dir / "results.jsonl", records)
    summary = build_report([results], tmp_path / "report")
    copy = tmp_path / "report" / bundle
    assert copy.read_text() == (campaign_dir / bundle).read_text()
    page_text = summary.index_html.read_text(encoding="utf-8")
    page = _parse_page(summary.index_html)
    # The quickest reproduction whose bundle is at hand, replayed relative to the page.
    assert f"shmstress replay {bundle}" in page.codes
    small = f"{Path(bundle).stem}.small.json"  # each failure's shrunk bundle named its own
    assert f"shmstress shrink {bundle} -o {small}" in page.codes
    assert f"shmstress replay {small}" in page.codes
    assert records[1]["rerun_command"] in page.codes
    assert f'href="{bundle}"' in page_text
    assert "gone.json" not in page_text


def test_report_command_counts_in_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from shmstress.reports.__main__ import main

    path = _write_jsonl(tmp_path / "r.jsonl", [_violation("x")])
    assert main([str(path), "-o", str(tmp_path / "out")]) == 0
    assert "1 trial, 1 configuration, 1 distinct failure -> " in capsys.readouterr().out
