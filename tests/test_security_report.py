"""The campaign report as an attacker's results file would have it (issue 27, items 5, 6, 8).

A results file is data of unknown origin: downloaded from CI, handed over on a share,
written by another user of the host. Whatever it holds, the page ``shmstress report``
writes runs no script when opened (read as a browser reads it: html5lib implements the
HTML parsing algorithm browsers do), links only below its own directory, shows commands
shell-quoted, publishes no file from outside the results directory and counts each
record once.
"""

from __future__ import annotations

import json
import os
import shlex
import urllib.parse
from pathlib import Path
from typing import Any

import html5lib
import pytest

from shmstress.cli.main import main
from shmstress.reports.report import build_report
from tests.test_reports import _trial, _violation, _write_jsonl

pytestmark = pytest.mark.faults

PLAIN_SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="40" height="20" viewBox="0 0 40 20" '
    'role="img"><title>the race</title><rect x="0" y="0" width="40" height="20" '
    'fill="#ffffff"/><g><title>step 1</title><text x="2" y="12" fill="#222222">binder #1'
    "</text></g></svg>\n"
)
"""A swimlane as the engine draws it (the same elements and attributes, smaller)."""

_ACTIVE_ELEMENTS = frozenset({"script", "iframe", "frame", "object", "embed", "base",
                              "foreignobject", "set", "animate"})
_URL_ATTRIBUTES = frozenset({"href", "src", "action", "formaction", "data", "poster",
                             "srcset", "background"})
_ACTIVE_SCHEMES = ("javascript:", "data:", "vbscript:")


def _elements(page: Path) -> list[Any]:
    """The page's elements as a browser builds them."""
    tree = html5lib.parse(page.read_bytes(), treebuilder="etree",
                          namespaceHTMLElements=False)
    return [e for e in tree.iter() if isinstance(e.tag, str)]  # not comments


def _local(name: str) -> str:
    return name.rpartition("}")[2].lower()


def active_parts(page: Path) -> list[str]:
    """Every element or attribute of the page that can run script, as the browser sees it."""
    found = []
    for element in _elements(page):
        tag = _local(element.tag)
        if tag in _ACTIVE_ELEMENTS:
            found.append(f"<{tag}>")
        if tag == "meta" and element.get("http-equiv") is not None:
            found.append(f"<meta http-equiv={element.get('http-equiv')}>")
        for name, value in element.attrib.items():
            attribute = _local(name)
            if attribute.startswith("on"):
                found.append(f"<{tag} {attribute}=...>")
            # A browser strips spaces and control characters around, and tabs and newlines
            # within, a URL before it reads the scheme.
            url = "".join(c for c in value if c > " ").lower()
            if attribute in _URL_ATTRIBUTES and url.startswith(_ACTIVE_SCHEMES):
                found.append(f"<{tag} {attribute}={value!r}>")
    return found


def links(page: Path) -> list[str]:
    return [value for element in _elements(page) for name, value in element.attrib.items()
            if _local(name) in _URL_ATTRIBUTES]


def codes(page: Path) -> list[str]:
    return ["".join(e.itertext()) for e in _elements(page) if e.tag == "code"]


def _campaign(tmp_path: Path, files: dict[str, str], record: dict[str, Any]) -> Path:
    """A campaign directory holding ``files`` (relative path -> text) and ``record``."""
    night = tmp_path / "night"
    for relative, text in files.items():
        (night / relative).parent.mkdir(parents=True, exist_ok=True)
        (night / relative).write_text(text, encoding="utf-8")
    night.mkdir(exist_ok=True)
    return _write_jsonl(night / "results.jsonl", [record])


# ----------------------------------------------------------------------------- item 5


@pytest.mark.parametrize("payload", [
    "<?x ><img src=x onerror=alert(1)>?>",  # ElementTree drops it; the HTML parser does not
    '<!-- --><img src=x onerror=alert(1)> -->',
])
def test_a_swimlane_svg_with_a_payload_runs_nothing(tmp_path: Path, payload: str) -> None:
    results = _campaign(tmp_path, {"bundles/c/x.json": "{}",
                                   "bundles/c/x.svg": PLAIN_SVG + payload},
                        _violation("boom", bundle="bundles/c/x.json",
                                   swimlane="bundles/c/x.svg"))
    summary = build_report([results], tmp_path / "report")
    assert active_parts(summary.index_html) == []
    # Not published either: opened by itself, an SVG is a document that runs scripts.
    assert not (tmp_path / "report" / "bundles" / "c" / "x.svg").exists()
    assert any("swimlane 'bundles/c/x.svg' not copied" in w for w in summary.warnings)


def test_a_plain_swimlane_is_shown_as_an_image(tmp_path: Path) -> None:
    results = _campaign(tmp_path, {"bundles/c/x.json": "{}", "bundles/c/x.svg": PLAIN_SVG},
                        _violation("boom", bundle="bundles/c/x.json",
                                   swimlane="bundles/c/x.svg"))
    summary = build_report([results], tmp_path / "report")
    assert active_parts(summary.index_html) == []
    images = [e.get("src") for e in _elements(summary.index_html) if e.tag == "img"]
    assert "bundles/c/x.svg" in images
    assert (tmp_path / "report" / "bundles" / "c" / "x.svg").read_text() == PLAIN_SVG
    assert summary.warnings == ()


def test_a_javascript_bundle_path_is_no_script_link(tmp_path: Path) -> None:
    bundle = "javascript:alert(document.domain)/x.json"
    results = _campaign(tmp_path, {bundle: "{}"}, _violation("boom", bundle=bundle))
    summary = build_report([results], tmp_path / "report")
    assert active_parts(summary.index_html) == []
    out = (tmp_path / "report").resolve()
    for link in links(summary.index_html):  # relative, below the page: a file or an anchor
        parts = urllib.parse.urlsplit(link)
        assert not parts.scheme and not parts.netloc, link
        if parts.path:
            target = (out / urllib.parse.unquote(parts.path)).resolve()
            assert target.is_relative_to(out) and target.is_file(), link
    # ... and still the bundle, copied, that the page replays.
    copied = [c for c in codes(summary.index_html) if c.startswith("shmstress replay ")]
    assert copied
    assert (out / shlex.split(copied[0])[2]).read_text() == "{}"


@pytest.mark.parametrize("bundle", ["bundles/c/x.html", "bundles/c/x.svg"])
def test_a_bundle_that_is_a_page_is_neither_copied_nor_linked(
    tmp_path: Path, bundle: str,
) -> None:
    """Opened from its link, a ``.html`` or ``.svg`` file would be a page that runs."""
    payload = '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'
    results = _campaign(tmp_path, {bundle: payload}, _violation("boom", bundle=bundle))
    summary = build_report([results], tmp_path / "report")
    assert not (tmp_path / "report" / bundle).exists()
    assert not [link for link in links(summary.index_html) if "x." in link]
    assert any(f"bundle {bundle!r} not copied" in w for w in summary.warnings)


def test_displayed_commands_are_shell_quoted(tmp_path: Path) -> None:
    bundle = "bundles/it's a night/x y.json"
    record = _violation("boom", bundle=bundle)
    record["rerun_command"] = "shmstress run --seed 1; touch pwned $(id) `id`"
    results = _campaign(tmp_path, {bundle: "{}"}, record)
    summary = build_report([results], tmp_path / "report")
    shown = [c for c in codes(summary.index_html) if c.startswith("shmstress ")]
    assert len(shown) == 4  # replay, shrink, replay the shrunk bundle, rerun
    for command in shown:
        # Canonical quoting: every word with a space, quote or shell character is quoted.
        assert shlex.join(shlex.split(command)) == command
    words = [shlex.split(c) for c in shown]
    assert ["shmstress", "replay", bundle] in words
    assert ["shmstress", "shrink", bundle, "-o", "x y.small.json"] in words
    # The recorded rerun runs shmstress with those words, nothing after a ';'.
    assert ["shmstress", "run", "--seed", "1;", "touch", "pwned", "$(id)", "`id`"] in words


# ----------------------------------------------------------------------------- item 6


def test_a_record_naming_etc_passwd_publishes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    results = _campaign(tmp_path, {}, _violation("boom", bundle="/etc/passwd",
                                                 swimlane="/etc/passwd"))
    out = tmp_path / "report"
    assert main(["report", str(results), "-o", str(out)]) == 0
    secret = Path("/etc/passwd").read_bytes()
    assert not [p for p in out.rglob("*") if p.name == "passwd"]
    assert not [p for p in out.rglob("*") if p.is_file() and p.read_bytes() == secret]
    err = capsys.readouterr().err.splitlines()
    assert [line for line in err if "bundle '/etc/passwd' not copied" in line]
    assert [line for line in err if "swimlane '/etc/passwd' not copied" in line]
    assert all(line.startswith("shmstress: warning: ") for line in err)


@pytest.mark.parametrize("escape", ["up", "symlink", "symlinked-directory", "fifo"])
def test_a_record_naming_a_file_out_of_the_results_directory_is_not_copied(
    tmp_path: Path, escape: str,
) -> None:
    night = tmp_path / "night"
    (night / "bundles").mkdir(parents=True)
    (tmp_path / "outside.json").write_text('{"secret": 1}')
    recorded = {
        "up": "../outside.json",
        "symlink": "bundles/link.json",
        "symlinked-directory": "bundles/d/outside.json",
        "fifo": "bundles/fifo.json",
    }[escape]
    if escape == "symlink":
        (night / recorded).symlink_to(tmp_path / "outside.json")
    if escape == "symlinked-directory":
        (night / "bundles" / "d").symlink_to(tmp_path, target_is_directory=True)
    if escape == "fifo":
        os.mkfifo(night / recorded)  # must be refused, not read (a read would block)
    results = _write_jsonl(night / "results.jsonl", [_violation("boom", bundle=recorded)])
    summary = build_report([results], tmp_path / "report")
    copies = [p for p in (tmp_path / "report").rglob("*") if p.suffix == ".json"]
    assert copies == []
    assert any(f"bundle {recorded!r} not copied" in w for w in summary.warnings)
    assert active_parts(summary.index_html) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file away needs root")
def test_a_file_of_another_owner_below_the_results_is_not_copied(tmp_path: Path) -> None:
    """What a hard link to another user's file looks like (fs.protected_hardlinks=0)."""
    results = _campaign(tmp_path, {"bundles/x.json": "{}"}, _violation("boom",
                                                                       bundle="bundles/x.json"))
    os.chown(tmp_path / "night" / "bundles" / "x.json", 65534, 65534)
    summary = build_report([results], tmp_path / "report")
    assert not (tmp_path / "report" / "bundles" / "x.json").exists()
    assert any("owned by uid 65534" in w for w in summary.warnings)


# ----------------------------------------------------------------------------- item 8


def test_a_duplicated_record_is_counted_once(tmp_path: Path) -> None:
    record = _violation("boom", bundle=None, replay_command=None)
    reordered = json.loads(json.dumps(dict(reversed(list(record.items())))))
    other = _trial(trial=1)  # another trial: kept
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (record, other, record))
                    + json.dumps(reordered, indent=None, separators=(",", ":")) + "\n")
    summary = build_report([path], tmp_path / "report")
    assert summary.n_trials == 2
    assert summary.n_failures == 1
    (warning,) = [w for w in summary.warnings if "duplicate" in w]
    assert warning.startswith("dropped 2 duplicate records")
    assert f"{path}:3 repeats {path}:1" in warning
    page = summary.index_html.read_text(encoding="utf-8")
    assert "<strong>1 trial</strong>" in page  # the failure's section counts it once
