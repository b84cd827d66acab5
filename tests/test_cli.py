"""The command line as a user meets it: help, one-line errors, exit codes, Ctrl-C, kill -9."""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import subprocess
import sys
import time

import psutil
import pytest

from shmstress.cli.commands import COMMANDS
from shmstress.cli.main import build_parser, main
from shmstress.core.shm import live_segments
from tests.helpers import segments_left_by_us

SHMSTRESS = [sys.executable, "-m", "shmstress"]


def test_help_explains_every_run_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    for option in ("--variant", "--workers", "--param", "--duration", "--seed", "--noise",
                   "--keep-going", "exit codes"):
        assert option in text
    for action in build_parser()._subparsers._group_actions[0].choices["run"]._actions:  # type: ignore[union-attr]
        assert action.help, f"{action.option_strings} has no help"


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["run", "--variant", "nope"], "no variant 'nope'"),
        (["run", "--param", "devices-per-node=0"], "--param devices-per-node must be >= 1"),
        (["run", "--duration", "-1"], "--duration must be a finite number > 0"),
        (["run", "--duration", "nan"], "--duration must be a finite number > 0"),
        (["run", "--drain-timeout", "nan"], "--drain-timeout must be a finite number >= 0"),
        (["run", "--max-sleep-us", "inf"], "--max-sleep-us must be a finite number >= 0"),
        (["run", "--workers", "binder=10000"], "at most 256 worker processes in all, got 10002"),
        (["run", "--param", "nodes=100000"], "--param nodes must be <= 256"),
        (["run", "--ring-size", "16"], "--ring-size must be >= 256"),
        (["run", "--tracker", "missing.py:X"], "does not exist"),
        (["run", "--param", "hold-steps"], "expected NAME=INTEGER"),
        (["run", "--duration", "abc"], "invalid float value: 'abc'"),
        (["run", "--mode", "sideways"], "invalid choice: 'sideways'"),
        (["run", "--no-such-option"], "unrecognized arguments: --no-such-option"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    args: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = live_segments()
    try:
        code = main(args)
    except SystemExit as exc:  # argparse's own errors
        code = int(exc.code or 0)
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert fragment in err
    assert len(err.splitlines()) == 1, err
    assert not segments_left_by_us(before)


def test_list_names_every_variant(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for variant in ("events-unordered", "gather-unchecked", "original", "fixed", "single-lock"):
        assert variant in out


def test_run_prints_summary_and_rerun_command(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "--variant", "gather-unchecked", "--duration", "15", "--seed", "3",
                 "--quiet"])
    out = capsys.readouterr().out
    assert code == 1
    assert "exit reason: violation" in out
    assert "shmstress run --tracker dra --variant gather-unchecked" in out
    assert "--seed 3" in out


def _workers_of(proc: subprocess.Popen[bytes], count: int) -> list[psutil.Process]:
    deadline = time.monotonic() + 20
    parent = psutil.Process(proc.pid)
    while time.monotonic() < deadline:
        children = parent.children()
        if len(children) >= count:
            return children
        time.sleep(0.05)
    raise AssertionError("workers never started")


@pytest.mark.parametrize("target", ["coordinator", "process group"])
def test_ctrl_c_tears_down_workers_and_segments(target: str) -> None:
    """A terminal's Ctrl-C signals the whole process group: the workers must ignore it
    and let the coordinator tear them down, not die of KeyboardInterrupt on their own."""
    proc = subprocess.Popen(
        [*SHMSTRESS, "run", "--variant", "fixed", "--duration", "60", "--quiet"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )
    workers = _workers_of(proc, 4)
    time.sleep(0.3)
    if target == "coordinator":
        proc.send_signal(signal.SIGINT)
    else:
        os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err.decode()
    assert b"exit reason: interrupted" in out
    assert b"crashed" not in out + err
    assert b"KeyboardInterrupt" not in err
    _, alive = psutil.wait_procs(workers, timeout=5)
    assert not alive
    assert not [s for s in live_segments() if s.startswith(f"shmstress-{proc.pid}-")]


def test_sigterm_tears_down_like_ctrl_c() -> None:
    proc = subprocess.Popen(
        [*SHMSTRESS, "run", "--variant", "fixed", "--duration", "60", "--quiet"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    workers = _workers_of(proc, 4)
    proc.terminate()
    proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert not psutil.wait_procs(workers, timeout=5)[1]
    assert not [s for s in live_segments() if s.startswith(f"shmstress-{proc.pid}-")]


def test_a_reader_that_closes_the_pipe_ends_the_run_without_a_traceback() -> None:
    """``shmstress run | head -1``: the run stops at its next line, tears down, exits 141."""
    reader, writer = os.pipe()
    os.close(reader)  # gone before the first line: every write fails, whatever the load
    try:
        proc = subprocess.Popen(
            [*SHMSTRESS, "run", "--variant", "fixed", "--duration", "1"],
            stdout=writer, stderr=subprocess.PIPE,
        )
    finally:
        os.close(writer)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 141, err.decode()
    assert b"Traceback" not in err
    assert not [s for s in live_segments() if s.startswith(f"shmstress-{proc.pid}-")]


def test_version_names_shmstress_and_python(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("shmstress ") and "(Python 3." in out and "unknown" not in out


def _subcommands(commands: set[str] | None = None) -> dict[str, argparse.ArgumentParser]:
    parser = build_parser(commands)
    found = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(found[0].choices)


@pytest.mark.parametrize("name", [command.name for command in COMMANDS])
def test_a_command_built_alone_is_the_command_the_documentation_shows(name: str) -> None:
    """The command line builds only the parser of the command it runs (``cli.commands``):
    that parser, and the list ``shmstress --help`` prints, are the full ones."""
    assert _subcommands({name})[name].format_help() == _subcommands()[name].format_help()
    assert build_parser({name}).format_help() == build_parser().format_help() == (
        build_parser(set()).format_help())


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["test", "--help"],
                                  ["test", "x.py:f", "--mode", "free", "--depth", "2"]])
def test_start_up_imports_only_what_the_command_uses(argv: list[str]) -> None:
    """``shmstress --version``, ``--help`` and ``test --help`` (and a usage error) answer
    without importing numpy, the engines or the other commands: they took most of a
    second to import."""
    probe = ("import sys; from shmstress.cli.main import main\n"
             f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
             "heavy = ('numpy', 'shmstress.plain.session', 'shmstress.free.runner', "
             "'shmstress.controlled.session', 'shmstress.cli.run', 'shmstress.cli.bench', "
             "'shmstress.render.swimlane', 'shmstress.core.shm')\n"
             "print('imported:', sorted(set(heavy) & set(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout.splitlines()[-1] == "imported: []", done.stdout + done.stderr


@pytest.mark.parametrize("name", sorted(_subcommands()))
def test_every_help_ends_with_examples_that_parse_and_the_exit_codes(name: str) -> None:
    sub = _subcommands()[name]
    text = sub.format_help()
    assert "examples:\n" in text and "exit codes:\n" in text, text
    examples = text.split("examples:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert examples
    for line in examples:
        command = shlex.split(line.split("   #", 1)[0])
        assert command[:2] == ["shmstress", name], line
        build_parser().parse_args(command[1:])  # argparse exits 2 on an example gone stale
