"""The documentation: the site builds in strict mode, its reference is generated from the
code, its runnable examples run as written, and the README keeps its promises.

A broken link, a page missing from the navigation or a stale anchor fails the strict
build; an option added to the parser shows up in the reference with no docs file edited;
a command a tutorial tells the reader to type exits as the page says.
"""

from __future__ import annotations

import argparse
import html
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
MARKER = re.compile(r"<!-- docs-test: (?P<spec>[^>]*?) -->\n```(?P<lang>\w+)\n(?P<body>.*?)```",
                    re.DOTALL)
NEW_OPTION = "--brand-new-option-for-the-docs-test"
NEW_COMMAND = "brand-new-command"


def _build(site: Path, monkeypatch: pytest.MonkeyPatch,
           patch_parser: Callable[[argparse.ArgumentParser], None] | None = None) -> None:
    """``mkdocs build --strict`` into ``site``, in this process (so a patched parser is
    the one the reference hook walks)."""
    pytest.importorskip("mkdocs")
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    import shmstress.cli.main as cli_main

    if patch_parser is not None:
        real = cli_main.build_parser

        def patched() -> argparse.ArgumentParser:
            parser = real()
            patch_parser(parser)
            return parser

        monkeypatch.setattr(cli_main, "build_parser", patched)
    monkeypatch.setenv("NO_MKDOCS_2_WARNING", "1")
    monkeypatch.chdir(ROOT)
    config = load_config(str(ROOT / "mkdocs.yml"), site_dir=str(site), strict=True)
    build(config)  # strict: any warning (a broken link, an anchor) aborts it


def _text(page: Path) -> str:
    """A built page's text, tags dropped: what a reader sees."""
    raw = page.read_text(encoding="utf-8")
    raw = re.sub(r"<(script|style)\b.*?</\1>", " ", raw, flags=re.DOTALL)
    return html.unescape(re.sub(r"<[^>]+>", " ", raw))


def _sections(page: Path) -> dict[str, str]:
    """The command-line page's text per ``shmstress COMMAND`` section."""
    raw = page.read_text(encoding="utf-8")
    parts = re.split(r'<h2 id="shmstress-([a-z-]+)"', raw)
    return {name: _text_of(body) for name, body in zip(parts[1::2], parts[2::2], strict=True)}


def _text_of(raw: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", raw))


def _squeezed(text: str) -> str:
    """Text as compared: Markdown's backticks and every space dropped (a code span's tags
    leave spaces that the source has not)."""
    return re.sub(r"[\s`]+", "", text)


def _add_to_parser(parser: argparse.ArgumentParser) -> None:
    """What a developer adds tomorrow: an option of ``test`` and a whole command."""
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    sub.choices["test"].add_argument(NEW_OPTION, metavar="WIDGETS",
                                     help="an option nobody wrote into a docs file")
    new = sub.add_parser(NEW_COMMAND, help="a command nobody documented",
                         description="Does what a new command does.")
    new.add_argument("--its-own-flag", action="store_true", help="and its own flag")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built once for this module, with an option and a command added to the
    parser that no docs file names."""
    out = tmp_path_factory.mktemp("site")
    with pytest.MonkeyPatch.context() as monkeypatch:
        _build(out, monkeypatch, _add_to_parser)
    return out


def test_the_site_builds_strict_and_every_page_is_there(site: Path) -> None:
    for page in ["index.html", "tutorial/first-race/index.html", "figures/index.html",
                 "reference/cli/index.html", "reference/exit-codes/index.html",
                 "reference/api/index.html", "reference/bundle/index.html",
                 "reference/results/index.html", "explanation/under-control/index.html"]:
        assert (site / page).is_file(), page


def test_every_command_and_option_is_in_the_generated_reference(site: Path) -> None:
    from shmstress.cli.main import build_parser

    sections = _sections(site / "reference" / "cli" / "index.html")
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert set(sub.choices) <= set(sections), set(sub.choices) - set(sections)
    for name, command in sub.choices.items():
        for action in command._actions:
            for option in action.option_strings:
                assert option in sections[name], f"shmstress {name} {option}"
            if not action.option_strings:
                assert (action.metavar or action.dest) in sections[name], (name, action.dest)
            if action.help and action.help != argparse.SUPPRESS and "%(" not in action.help:
                first_words = " ".join(action.help.split()[:6])
                assert _squeezed(first_words) in _squeezed(sections[name]), (name, first_words)


def test_the_reference_is_generated_not_copied(site: Path) -> None:
    """An option and a command added to the parser (in this test only) are in the site,
    and no file in docs/ names them."""
    sections = _sections(site / "reference" / "cli" / "index.html")
    assert NEW_OPTION in sections["test"]
    assert "an option nobody wrote into a docs file" in sections["test"]
    assert NEW_COMMAND in sections and "--its-own-flag" in sections[NEW_COMMAND]
    for path in [*DOCS.rglob("*"), ROOT / "mkdocs.yml"]:
        if path.is_file():
            assert NEW_OPTION not in path.read_text(encoding="utf-8", errors="replace")


def test_every_exit_code_and_reason_is_in_the_reference(site: Path) -> None:
    from shmstress.core.exit_reason import ExitCode, ExitReason

    text = _squeezed(_text(site / "reference" / "exit-codes" / "index.html"))
    for code in ExitCode:
        assert _squeezed(f"{code.value} {code.describe()} {code.advice()}") in text, code
    for reason in ExitReason:
        assert reason.value in text, reason


def test_the_schemas_are_every_field_of_their_definitions(site: Path) -> None:
    import msgspec

    from shmstress.reports.schema import Config, Record, Violation
    from shmstress.repro.bundle_schema import BundleDoc, ConfigDoc, StrategyDoc, ViolationDoc
    from shmstress.repro.plain_bundle import PlainBundleDoc

    bundle = _text(site / "reference" / "bundle" / "index.html")
    results = _text(site / "reference" / "results" / "index.html")
    for struct, text in [(BundleDoc, bundle), (ConfigDoc, bundle), (StrategyDoc, bundle),
                         (ViolationDoc, bundle), (PlainBundleDoc, bundle), (Record, results),
                         (Config, results), (Violation, results)]:
        for field in msgspec.structs.fields(struct):
            assert field.encode_name in text, (struct.__name__, field.encode_name)


def test_the_api_reference_holds_the_docstrings(site: Path) -> None:
    from shmstress.api import Tracker
    from shmstress.testing.plain import concurrency_test

    page = site / "reference" / "api" / "index.html"
    text = _squeezed(_text(page))
    first_line = (concurrency_test.__doc__ or "").strip().split("\n")[0]
    assert first_line and _squeezed(first_line) in text
    assert 'id="shmstress.api.Tracker"' in page.read_text(encoding="utf-8")
    assert _squeezed((Tracker.__doc__ or "").split(":")[0]) in text  # "Base class of ..."


# -- the examples that run ----------------------------------------------------------------


def _runnable_pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if "docs-test:" in p.read_text())


def _blocks(page: Path) -> list[tuple[dict[str, str], str, str]]:
    found = []
    for match in MARKER.finditer(page.read_text(encoding="utf-8")):
        spec = dict(item.split("=", 1) if "=" in item else (item, "")
                    for item in shlex.split(match["spec"]))
        found.append((spec, match["lang"], match["body"]))
    return found


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "SHMSTRESS_OUT"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def test_there_are_runnable_examples() -> None:
    pages = {p.relative_to(DOCS).as_posix() for p in _runnable_pages()}
    assert {"tutorial/first-race.md", "tutorial/first-pytest-test.md",
            "how-to/queue-pool.md"} <= pages


@pytest.mark.parametrize("page", _runnable_pages(), ids=lambda p: p.relative_to(DOCS).as_posix())
def test_a_pages_runnable_examples_run_as_written(page: Path, tmp_path: Path) -> None:
    """Each marked block, in order, in one directory holding a copy of examples/ (a later
    block may use what an earlier one wrote: the bundle it replays)."""
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    blocks = _blocks(page)
    assert blocks
    for spec, lang, body in blocks:
        if lang == "python":
            (tmp_path / "test_from_docs.py").write_text(body, encoding="utf-8")
            done = _run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                         "test_from_docs.py"], tmp_path)
            assert done.returncode == 0, done.stdout + done.stderr
            assert f"{spec['passed']} passed" in done.stdout, done.stdout
            continue
        assert lang == "sh", lang
        done = _run(["bash", "-c", body], tmp_path)
        assert done.returncode == int(spec["exit"]), (body, done.stdout, done.stderr)
        if "expect" in spec:
            assert spec["expect"] in done.stdout, (body, done.stdout)


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, env=_environment(), capture_output=True,
                          text=True, timeout=600, check=False)


# -- the README ---------------------------------------------------------------------------


README = ROOT / "README.md"


def _readme_blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(encoding="utf-8"),
                      flags=re.DOTALL)


def test_the_readme_is_a_few_screens_that_start_with_plain_code() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.encode()) <= 12 * 1024
    head = text.splitlines()[:60]
    assert any(line.startswith("shmstress test ") for line in head), "no shmstress test"
    first = _readme_blocks("sh")[0]
    assert "pip install -e ." in first and "[dev]" not in first  # what the main job needs


def test_the_readme_test_command_is_the_one_ci_runs() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    test_block = next(b for b in _readme_blocks("sh") if "pytest" in b)
    commands = [line for line in test_block.splitlines() if line and not line.startswith("#")]
    assert commands[-1] == ci[-1] == "python -m pytest -n auto"
    assert "pip install -e '.[dev]'" in commands[0]
    assert "python -m pip install --quiet -e '.[dev]'" in ci


def test_the_readme_first_race_exits_1_with_its_replay(tmp_path: Path) -> None:
    (test_line,) = [line for line in _readme_blocks("sh")[0].splitlines()
                    if line.startswith("shmstress test ")]
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    done = _run(["bash", "-c", test_line], tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "replay it: shmstress replay shmstress-out/" in done.stdout


def test_the_readme_links_lead_somewhere() -> None:
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README.read_text(encoding="utf-8"))
    assert links
    for link in links:
        assert (ROOT / link).exists(), link


@pytest.mark.parametrize("name", ["figures.md", "figures-sctbench.md"])
def test_every_figure_page_names_the_command_that_made_it(name: str) -> None:
    page = (DOCS / name).read_text(encoding="utf-8")
    command = page.split("Measured by `", 1)[1].split("`", 1)[0]
    assert command.startswith("shmstress bench ") and f"--markdown docs/{name}" in command
