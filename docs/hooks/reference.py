"""MkDocs hook: the reference pages, generated at every build from the code they describe.

A reference copied by hand is stale the day an option is added. So the command-line
reference walks the real parser (``shmstress.cli.main.build_parser``), the exit codes come
from ``ExitCode`` and ``ExitReason``, and the bundle and results schemas from the msgspec
Structs that read and write those files. Nothing here holds a name of an option, a code
or a field: ``tests/test_docs.py`` adds an option to the parser and sees it in the site.

The pages are added to the build as generated files (``File.generated``), so they exist
only in the built site, never in ``docs/``.
"""

from __future__ import annotations

import argparse
import ast
import html
import inspect
import re
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import msgspec.inspect as mi
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

CLI_PAGE = "reference/cli.md"
EXIT_CODES_PAGE = "reference/exit-codes.md"
BUNDLE_PAGE = "reference/bundle.md"
RESULTS_PAGE = "reference/results.md"


WALKTHROUGH = {"how-to/tracker-walkthrough.md": "examples/README.md",
               "how-to/counter_tracker.py": "examples/counter_tracker.py"}
"""Files of the repository shown in the site as they are (one copy: the example's)."""


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add the generated reference pages, and the tracker example, to the build."""
    for uri, content in generated_pages().items():
        files.append(File.generated(config, uri, content=content))
    root = Path(config.config_file_path).parent
    for uri, source in WALKTHROUGH.items():
        files.append(File.generated(config, uri, abs_src_path=str(root / source)))
    return files


def generated_pages() -> dict[str, str]:
    """Each generated page's path in the site and its Markdown, from the code as it is now."""
    from shmstress.cli import main as cli_main
    from shmstress.pytest import plugin
    from shmstress.reports import schema as results_schema
    from shmstress.repro import bundle, bundle_schema, plain_bundle

    return {
        CLI_PAGE: cli_reference(cli_main.build_parser()) + pytest_reference(plugin),
        EXIT_CODES_PAGE: exit_codes_reference(),
        BUNDLE_PAGE: schema_page(
            "Bundle format",
            "A failing run writes its repro bundle, one JSON file: a tracker's run "
            f"(`format` `{bundle_schema_format()}`, `format_version` "
            f"{bundle.FORMAT_VERSION}) or a plain-code scenario's (`format` "
            f"`{plain_bundle.FORMAT}`, `format_version` {plain_bundle.FORMAT_VERSION}). "
            "Their failing `execution` is numbered from 1, as the commands print it, from "
            f"format version {bundle.EXECUTIONS_FROM_ONE} on; an older bundle numbered it "
            "from 0, and is still read (renumbered). Steps are numbered from 1 wherever a "
            "command prints one (the first step of `steps` is step 1); a field that points "
            "into `steps` (`loose`, `phase_changes`) holds a position in that array, from 0 "
            "as JSON arrays are, the same in every format version. The tables below are "
            "generated from the msgspec Structs that write and read them "
            "(`shmstress.repro.bundle_schema`, `shmstress.repro.plain_bundle`): a field that "
            "is not required may be left out. "
            "See [a bundle is data, but it names code](../explanation/replay.md#a-bundle-is-"
            "data-but-it-names-code) for what replaying one imports.",
            [("Tracker bundle", bundle_schema.BundleDoc),
             ("Plain-code bundle", plain_bundle.PlainBundleDoc)]),
        RESULTS_PAGE: schema_page(
            "Results schema",
            "A campaign (and `pytest --stress-report`) appends one JSON line per trial to "
            "`results.jsonl`, a record of the published results schema, version "
            f"{results_schema.SCHEMA_VERSION} (`\"schema\": {results_schema.SCHEMA_VERSION}`"
            "; version-1 records are still read). Generated from the msgspec Structs in "
            "`shmstress.reports.schema`, which the engine writes and the reports read:\n\n"
            + _docstring_markdown(results_schema),
            [("Record", results_schema.Record[results_schema.Config])]),
    }


def bundle_schema_format() -> str:
    from shmstress.repro import bundle

    return str(bundle.FORMAT)


# -- the command line ---------------------------------------------------------------------


def cli_reference(parser: argparse.ArgumentParser) -> str:
    """Every command and option of ``parser``, with its help, default and choices."""
    lines = [
        "# Command line",
        "",
        "Generated from the `shmstress` argument parser at every build of this site: every "
        "command and option is here as `shmstress COMMAND --help` prints it. Every command "
        "exits with one of the [exit codes](exit-codes.md).",
        "",
        f"```text\n{parser.format_usage().strip()}\n```",
        "",
        *_options_tables(parser),
    ]
    for name, sub in _subcommands(parser):
        lines += ["", f"## shmstress {name}", ""]
        prose, _, described = (sub.description or "").partition("\nexamples:")
        if prose.strip():
            lines += [_escape(" ".join(prose.split())), ""]
        lines += [f"```text\n{_usage(sub)}\n```", "", *_options_tables(sub)]
        examples = _examples(sub.epilog or "") or _examples("examples:" + described)
        if examples:
            lines += ["", "Examples:", "", "```sh", *examples, "```"]
    return "\n".join(lines) + "\n"


def _subcommands(parser: argparse.ArgumentParser) -> Iterator[tuple[str, Any]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from action.choices.items()


def _usage(parser: argparse.ArgumentParser) -> str:
    formatter = argparse.HelpFormatter(parser.prog, width=88)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    return formatter.format_help().strip()


def _options_tables(parser: argparse.ArgumentParser) -> list[str]:
    lines: list[str] = []
    for group in parser._action_groups:
        actions = [a for a in group._group_actions
                   if a.help != argparse.SUPPRESS
                   and not isinstance(a, argparse._SubParsersAction)]
        if not actions:
            continue
        title = (group.title or "options").capitalize()
        lines += [f"**{_escape(title)}**", ""]
        if group.description:
            lines += [_escape(group.description), ""]
        lines += ["| option | meaning |", "|---|---|"]
        for action in actions:
            lines.append(f"| {_invocation(action)} | {_cell(_help(action))} |")
        lines.append("")
    return lines


def _invocation(action: argparse.Action) -> str:
    """``--depth D``, ``-o, --out DIR``, or a positional's name, as code."""
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    if action.nargs == 0:
        return ", ".join(f"`{o}`" for o in action.option_strings)
    metavar = action.metavar or (action.dest.upper() if action.choices is None else None)
    if metavar is None:
        metavar = "{" + ",".join(map(str, action.choices or ())) + "}"
    return ", ".join(f"`{o} {metavar}`" for o in action.option_strings)


def _help(action: argparse.Action) -> str:
    text = action.help or ""
    if "%(" in text:  # argparse's own expansion: %(default)s and the like
        text = text % {**vars(action), "prog": "shmstress", "default": action.default}
    if action.choices is not None and not isinstance(action, argparse._SubParsersAction):
        text += " (choices: " + ", ".join(f"`{c}`" for c in action.choices) + ")"
    if isinstance(action, argparse._AppendAction) and "repeatable" not in text:
        text += " (repeatable)"
    return text


def _examples(epilog: str) -> list[str]:
    """The ``examples:`` block of a command's epilog, as shell lines."""
    if not epilog.startswith("examples:"):
        return []
    block = epilog.split("\n\n", 1)[0].splitlines()[1:]
    return [line.strip() for line in block if line.strip()]


class _PytestOptions:
    """Stands in for pytest's parser: records what the plugin's ``pytest_addoption`` adds."""

    def __init__(self) -> None:
        self.options: list[tuple[tuple[str, ...], dict[str, Any]]] = []
        self.ini: list[tuple[str, str, dict[str, Any]]] = []

    def getgroup(self, *args: Any, **kwargs: Any) -> _PytestOptions:
        return self

    def addoption(self, *names: str, **kwargs: Any) -> None:
        self.options.append((names, kwargs))

    def addini(self, name: str, help: str, **kwargs: Any) -> None:
        self.ini.append((name, help, kwargs))


def pytest_reference(plugin: Any) -> str:
    """The pytest plugin's command-line and ini options, from its ``pytest_addoption``."""
    recorded = _PytestOptions()
    plugin.pytest_addoption(recorded)
    lines = ["", "## pytest options", "",
             "Installing shmstress installs its pytest plugin; these are its options "
             "(`pytest --help` lists them under shmstress).", "",
             "| option | meaning |", "|---|---|"]
    for names, kwargs in recorded.options:
        metavar = kwargs.get("metavar")
        shown = ", ".join(f"`{n} {metavar}`" if metavar else f"`{n}`" for n in names)
        lines.append(f"| {shown} | {_cell(kwargs.get('help', ''))} |")
    lines += ["", "Ini options (`pytest.ini`, or `[tool.pytest.ini_options]` in "
              "`pyproject.toml`):", "", "| ini option | meaning | default |", "|---|---|---|"]
    for name, text, kwargs in recorded.ini:
        lines.append(f"| `{name}` | {_cell(text)} | `{kwargs.get('default', '')}` |")
    return "\n".join(lines) + "\n"


# -- exit codes ---------------------------------------------------------------------------


def exit_codes_reference() -> str:
    from shmstress.core.exit_reason import ExitCode, ExitReason

    lines = [
        "# Exit codes",
        "",
        "Every command exits with one of these codes (`shmstress --help` prints the same "
        "table). Generated from `shmstress.core.exit_reason.ExitCode`.",
        "",
        "| code | meaning | what a nightly job should do |",
        "|---|---|---|",
        *(f"| {code.value} | {code.describe()} | {code.advice()} |" for code in ExitCode),
        "",
        "## Exit reasons",
        "",
        "A run ends with an explicit exit reason (printed in its summary and kept in "
        "`results.jsonl` as `exit_reason`), never with a bare traceback; each reason "
        "decides the exit code. Generated from `ExitReason`.",
        "",
        "| exit reason | what happened | exit code |",
        "|---|---|---|",
        *(f"| `{reason.value}` | {_cell(reason.describe())} | {int(reason.exit_code)} |"
          for reason in ExitReason),
    ]
    return "\n".join(lines) + "\n"


# -- schemas ------------------------------------------------------------------------------


def schema_page(title: str, intro: str, roots: list[tuple[str, Any]]) -> str:
    lines = [f"# {title}", "", intro]
    for heading, root in roots:
        lines += ["", f"## {heading}", ""]
        for struct in _structs(mi.type_info(root)):
            lines += _struct_table(struct)
    return "\n".join(lines) + "\n"


def _structs(info: mi.Type) -> list[mi.StructType]:
    """``info``'s Struct, then every Struct its fields reach, each once, in order."""
    found: list[mi.StructType] = []

    def visit(node: mi.Type) -> None:
        if isinstance(node, mi.StructType):
            if any(s.cls is node.cls for s in found):
                return
            found.append(node)
            for field in node.fields:
                visit(field.type)
        for child in _children(node):
            visit(child)

    visit(info)
    return found


def _children(node: mi.Type) -> tuple[mi.Type, ...]:
    if isinstance(node, mi.UnionType):
        return node.types
    if isinstance(node, mi.ListType | mi.SetType | mi.FrozenSetType | mi.VarTupleType):
        return (node.item_type,)
    if isinstance(node, mi.TupleType):
        return node.item_types
    if isinstance(node, mi.DictType):
        return (node.key_type, node.value_type)
    return ()


def _struct_table(struct: mi.StructType) -> list[str]:
    notes = _field_notes(struct.cls)
    name = struct.cls.__name__
    lines = [f"### `{name}`", ""]
    doc = inspect.getdoc(struct.cls)
    if doc and doc != inspect.getdoc(msgspec.Struct):
        lines += [_escape(doc), ""]
    lines += ["| field | type | required | default | notes |", "|---|---|---|---|---|"]
    for field in struct.fields:
        default = ("" if field.default is msgspec.NODEFAULT else f"`{field.default!r}`")
        if field.default_factory is not msgspec.NODEFAULT:
            default = f"`{field.default_factory()!r}`"
        required = "yes" if field.required else "no"
        lines.append(f"| `{field.encode_name}` | {_type_name(field.type)} | {required} | "
                     f"{_cell(default)} | {_cell(notes.get(field.name, ''))} |")
    return [*lines, ""]


def _type_name(node: mi.Type) -> str:
    simple = {mi.IntType: "int", mi.StrType: "str", mi.FloatType: "float",
              mi.BoolType: "bool", mi.NoneType: "null", mi.AnyType: "any"}
    for kind, name in simple.items():
        if isinstance(node, kind):
            bounds = [f"{op} {getattr(node, attr)}" for attr, op in
                      (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<"))
                      if getattr(node, attr, None) is not None]
            return name + (f" ({', '.join(bounds)})" if bounds else "")
    if isinstance(node, mi.StructType):
        return f"[`{node.cls.__name__}`](#{node.cls.__name__.lower()})"
    if isinstance(node, mi.LiteralType):
        return " \\| ".join(f"`{value!r}`" for value in node.values)
    if isinstance(node, mi.UnionType):
        return " \\| ".join(_type_name(t) for t in node.types)
    if isinstance(node, mi.ListType):
        return f"list of {_type_name(node.item_type)}"
    if isinstance(node, mi.TupleType):
        return "[" + ", ".join(_type_name(t) for t in node.item_types) + "]"
    if isinstance(node, mi.DictType):
        return f"map {_type_name(node.key_type)} → {_type_name(node.value_type)}"
    return type(node).__name__


def _field_notes(cls: type) -> dict[str, str]:
    """What the source says of each field: the docstring under it, or its comments (those
    on the lines just above it and on its own line)."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    lines = source.splitlines()
    (node,) = ast.parse(source).body
    assert isinstance(node, ast.ClassDef)
    notes: dict[str, str] = {}
    body = node.body
    for index, statement in enumerate(body):
        if not (isinstance(statement, ast.AnnAssign)
                and isinstance(statement.target, ast.Name)):
            continue
        name = statement.target.id
        after = body[index + 1] if index + 1 < len(body) else None
        if (isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)):
            notes[name] = " ".join(inspect.cleandoc(after.value.value).split()).replace("``", "`")
            continue
        comments = []
        row = statement.lineno - 2
        while row >= 0 and lines[row].strip().startswith("#"):
            comments.insert(0, lines[row].strip().lstrip("#").strip())
            row -= 1
        own = lines[statement.lineno - 1]
        if "#" in own and statement.end_lineno == statement.lineno:
            comments.append(own.split("#", 1)[1].strip())
            row = statement.lineno  # an inline comment may go on over the next lines
            following = body[index + 1].lineno - 1 if index + 1 < len(body) else len(lines)
            while row < following and lines[row].strip().startswith("#"):
                if row + 1 < following and not lines[row + 1].strip().startswith("#"):
                    break  # the last comment line above the next field is that field's
                comments.append(lines[row].strip().lstrip("#").strip())
                row += 1
        if comments:
            notes[name] = " ".join(comments).replace("``", "`")
    return notes


def _docstring_markdown(module: Any) -> str:
    """A module docstring as Markdown: its ``::`` literal blocks fenced."""
    doc = inspect.getdoc(module) or ""
    out: list[str] = []
    in_block = False
    for line in doc.splitlines():
        if in_block and line.strip() and not line.startswith("    "):
            out.append("```")
            in_block = False
        if line.endswith("::"):
            out += [line[:-1], "", "```json"]
            in_block = True
            continue
        out.append(line[4:] if in_block else line)
    if in_block:
        out.append("```")
    return "\n".join(out).replace("``", "`")


# -- Markdown -----------------------------------------------------------------------------


def _cell(text: str) -> str:
    """Text for a table cell: one line, pipes escaped, angle brackets as text."""
    return _escape(" ".join(text.split())).replace("|", "\\|")


def _escape(text: str) -> str:
    """Help text is prose, not Markdown or HTML: ``<BUNDLE>`` must show, not vanish."""
    return re.sub(r"[<>&]", lambda m: html.escape(m.group()), text)
