"""A long exploration saved and resumed: the resumed one runs exactly the executions an
uninterrupted one would, a checkpoint of another exploration is refused, and the suite
keeps the trials that finished.

The exploration is ``stack_ok`` under the default (the portfolio), long enough that the
portfolio changes stage on both sides of the cut and that DPOR, whose search is still
going at the cut, takes turns on both sides: what a resume must carry over is every
member's RNG and what DPOR learnt. The second half runs in a fresh interpreter, as a
real resume does (other addresses, another hash seed, a new session).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import pickle
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from shmstress.bench.sctbench.programs import program
from shmstress.bench.sctbench.run import STRATEGIES
from shmstress.cli.main import main
from shmstress.controlled.strategies import PLAIN_MIX, Portfolio, PortfolioSpec
from shmstress.controlled.strategies.portfolio import DPOR
from shmstress.core.provenance import shmstress_code
from shmstress.plain.checkpoint import CheckpointError, Checkpointing, Identity
from shmstress.plain.outcome import PlainOutcome
from shmstress.plain.runner import Exploration, PlainResult, explore
from shmstress.plain.scenario import ScenarioRef
from shmstress.plain.spec import PlainSpec
from tests.helpers import spy_on_hosts

PROGRAM = "stack_ok"
EXECUTIONS = 250  # past the stage at 240: the smallest run with a stage change on both sides
HALF = EXECUTIONS // 2
ROOT = Path(__file__).resolve().parents[1]


def _exploration(executions: int = EXECUTIONS) -> Exploration:
    return Exploration(PortfolioSpec(), 0, executions)


def _fingerprint(outcome: PlainOutcome) -> str:
    """The execution's seed and schedule: who took which point, with what value."""
    steps = [(s.worker, s.label, s.index, repr(s.value)) for s in outcome.steps]
    return hashlib.sha256(repr((outcome.execution_seed, outcome.end.value,
                                steps)).encode()).hexdigest()


def _summary(result: PlainResult) -> dict[str, object]:
    coverage = result.coverage
    assert coverage is not None
    return {"executions": result.executions, "ends": result.ends, "steps": result.steps,
            "members": [list(m) for m in coverage.members],
            "max_preemptions": coverage.max_preemptions, "failing": result.failing_index}


def resume_in_this_process(path: str, out: str) -> None:
    """The fresh interpreter's half: resume from ``path``, write what it ran to ``out``."""
    ran: list[str] = []
    lines: list[str] = []
    result = explore(program(PROGRAM).spec(), _exploration(), witness=lambda o: ran.append(
        _fingerprint(o)), checkpoint=Checkpointing(Path(path), log=lines.append))
    Path(out).write_text(json.dumps({"ran": ran, "lines": lines,
                                     "summary": _summary(result)}))


def test_a_resumed_exploration_runs_exactly_the_executions_of_an_uninterrupted_one(
        tmp_path: Path) -> None:
    """One exploration runs all its executions, saving on the way; the checkpoint it saved
    half-way is resumed in a fresh interpreter, whose executions must be the second half's.
    (A checkpoint saved by a signal is resumed in the suite's test below.)"""
    stages = [stage.start for stage in PLAIN_MIX.stages]
    assert any(0 < s < HALF for s in stages) and any(HALF < s < EXECUTIONS for s in stages)
    spec = program(PROGRAM).spec()
    path, half_way = tmp_path / "trial.ckpt", tmp_path / "half-way.ckpt"
    whole: list[str] = []

    def keep_half_way(done: int, ends: dict[str, int]) -> None:
        if done == HALF + 1:  # the save at the boundary after execution HALF is done
            shutil.copyfile(path, half_way)

    saving = Checkpointing(path, seconds=math.inf, every=HALF)  # saved at HALF, by count only
    uninterrupted = explore(spec, _exploration(), keep_half_way, saving,
                            witness=lambda o: whole.append(_fingerprint(o)))
    assert uninterrupted.executions == EXECUTIONS and uninterrupted.failing is None
    saved = Checkpointing(half_way).load(Identity.of(spec, _exploration().strategy, 0,
                                                     EXECUTIONS))
    assert saved is not None and saved.ending is None and saved.tally.executions == HALF
    assert isinstance(saved.strategy, Portfolio)
    dpor_at_cut = dict(saved.strategy.coverage())[DPOR.short()]

    out = tmp_path / "second.json"
    done = subprocess.run(
        [sys.executable, "-c", "from tests.test_checkpoint import resume_in_this_process; "
         f"resume_in_this_process({str(half_way)!r}, {str(out)!r})"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    second = json.loads(out.read_text())
    assert second["lines"] == [f"resumed from checkpoint {half_way} at execution {HALF + 1:,} "
                               f"({HALF:,} done)"]
    assert second["ran"] == whole[HALF:]
    assert second["summary"] == json.loads(json.dumps(_summary(uninterrupted)))
    assert uninterrupted.coverage is not None
    dpor_at_end = dict(uninterrupted.coverage.members)[DPOR.short()]
    assert 0 < dpor_at_cut < dpor_at_end  # DPOR's search ran on both sides of the cut


def test_a_checkpoint_of_another_exploration_is_refused_and_an_ended_one_answers(
        tmp_path: Path) -> None:
    spec = program(PROGRAM).spec()
    path = tmp_path / "trial.ckpt"
    ran: list[str] = []
    ended = explore(spec, _exploration(3), checkpoint=Checkpointing(path),
                    witness=lambda o: ran.append(_fingerprint(o)))
    assert len(ran) == 3
    lines: list[str] = []
    again = explore(spec, _exploration(3), checkpoint=Checkpointing(path, log=lines.append),
                    witness=lambda o: ran.append(_fingerprint(o)))
    assert len(ran) == 3 and len(lines) == 1 and "ended before" in lines[0]  # nothing ran
    assert _summary(again) == _summary(ended)
    with pytest.raises(CheckpointError, match=r"executions 3 in the checkpoint, 4 here") as err:
        explore(spec, _exploration(4), checkpoint=Checkpointing(path))
    assert "\n" not in str(err.value)
    other = program("queue_ok").spec()
    with pytest.raises(CheckpointError, match="queue_ok"):
        explore(other, _exploration(3), checkpoint=Checkpointing(path))
    path.write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="cannot be read"):
        explore(spec, _exploration(3), checkpoint=Checkpointing(path))


SUITE = ["bench", "--suite", "sctbench", "--program", "stack_bad", "--strategy", "dpor",
         "--twin-strategy", "dpor", "--seeds", "1", "--executions", "4", "--jobs", "1"]


def _figures(path: Path) -> object:
    """A suite's JSON without its wall times."""
    def strip(data: object) -> object:
        if isinstance(data, dict):
            return {k: strip(v) for k, v in data.items() if "seconds" not in k
                    and k not in ("median_s", "median_s_sum")}
        return [strip(item) for item in data] if isinstance(data, list) else data
    return strip(json.loads(path.read_text()))


def test_the_suite_resumes_a_cut_trial_keeps_finished_ones_and_refuses_another_command(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reference, first, second = (tmp_path / f"{n}.json" for n in ("whole", "first", "second"))
    assert main([*SUITE, "--json", str(reference)]) == 0
    directory = tmp_path / "ckpt"
    dpor = next(s for s in STRATEGIES if s.key == "dpor").spec
    cut = directory / "stack_ok.dpor.seed0.ckpt"  # the twin's trial, cut at its 2nd execution

    def stop(done: int, ends: dict[str, int]) -> None:
        if done == 2:
            os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(KeyboardInterrupt):
        explore(program("stack_ok").spec(), Exploration(dpor, 0, 4), stop, Checkpointing(cut))
    capsys.readouterr()
    assert main([*SUITE, "--checkpoint", str(directory), "--json", str(first)]) == 0
    captured = capsys.readouterr()
    assert f"resumed from checkpoint {cut} at execution 3 (2 done)" in captured.err
    assert _figures(first) == _figures(reference)
    assert main([*SUITE, "--checkpoint", str(directory), "--json", str(second)]) == 0
    captured = capsys.readouterr()
    assert captured.err.count("finished in an earlier run") == 2, captured.err  # none ran
    assert json.loads(second.read_text()) == json.loads(first.read_text())
    changed = [*SUITE[:-4], "--executions", "5", "--jobs", "1"]
    assert main([*changed, "--checkpoint", str(directory)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.strip().splitlines()) == 1, captured.err
    assert "--executions 4 there, 5 here" in captured.err


def test_shmstress_test_resumes_from_its_checkpoint_with_the_seed_it_saved(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "search.ckpt"
    command = ["test", str(ROOT / "examples" / "plain" / "counter.py") + ":locked",
               "--executions", "3", "--quiet", "--checkpoint", str(path)]
    assert main(command) == 0  # no --seed: a random one, saved
    first = capsys.readouterr()
    assert main(command) == 0
    again = capsys.readouterr()
    assert again.out.splitlines()[0] == first.out.splitlines()[0]  # the same seed
    assert "ended before (3 executions)" in again.err
    assert main([*command[:2], "--executions", "4", *command[4:]]) == 2
    refused = capsys.readouterr()
    assert refused.out == "" and len(refused.err.strip().splitlines()) == 1, refused.err
    assert "executions 3 in the checkpoint, 4 here" in refused.err


def test_a_resumed_search_gets_a_fresh_host_and_runs_what_a_forked_one_would(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A short search runs in a forked host; checkpointed, and resumed, in a fresh
    interpreter (a fork would carry the loaded search into every process start), with the
    executions unchanged."""
    hosts = spy_on_hosts(monkeypatch)
    spec, dpor = program("stack_ok").spec(), next(s for s in STRATEGIES if s.key == "dpor").spec
    whole: list[str] = []
    explore(spec, Exploration(dpor, 0, 4), witness=lambda o: whole.append(_fingerprint(o)))
    assert hosts == [False]

    def stop(done: int, ends: dict[str, int]) -> None:
        if done == 2:
            os.kill(os.getpid(), signal.SIGINT)

    cut, ran = Checkpointing(tmp_path / "search.ckpt"), list[str]()
    with pytest.raises(KeyboardInterrupt):
        explore(spec, Exploration(dpor, 0, 4), stop, cut,
                witness=lambda o: ran.append(_fingerprint(o)))
    explore(spec, Exploration(dpor, 0, 4), checkpoint=cut,
            witness=lambda o: ran.append(_fingerprint(o)))
    assert hosts == [False, True, True]
    assert ran == whole


def test_a_checkpoint_of_other_code_under_test_is_refused_not_answered_from(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The trap: a search finds the lost update and ends; the user fixes the code and runs
    the same command. The checkpoint must not answer with the old failure."""
    app = tmp_path / "app.py"
    racy = (ROOT / "examples" / "plain" / "counter.py").read_text()
    app.write_text(racy)
    command = ["test", f"{app}:racy", "--executions", "50", "--seed", "1", "--quiet",
               "--checkpoint", str(tmp_path / "search.ckpt")]
    assert main(command) == 1
    capsys.readouterr()
    fixed = racy.replace("def increment(counter):\n    counter.value += 1",
                         "def increment(counter):\n    with counter.get_lock():\n"
                         "        counter.value += 1")
    assert fixed != racy
    app.write_text(fixed)
    assert main(command) == 2
    refused = capsys.readouterr()
    assert refused.out == "" and len(refused.err.strip().splitlines()) == 1, refused.err
    assert f"{app.resolve()} changed" in refused.err and "delete it" in refused.err
    app.write_text(racy)  # the code it searched: it answers again, running nothing
    assert main(command) == 1
    assert "ended before" in capsys.readouterr().err


def test_a_cut_search_resumes_only_on_the_code_it_searched(tmp_path: Path) -> None:
    app = tmp_path / "app.py"
    app.write_text((ROOT / "examples" / "plain" / "counter.py").read_text())
    spec = PlainSpec(ScenarioRef.parse(f"{app}:locked"))
    cut = Checkpointing(tmp_path / "search.ckpt")

    def stop(done: int, ends: dict[str, int]) -> None:
        if done == 2:
            os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(KeyboardInterrupt):
        explore(spec, _exploration(6), stop, cut)
    saved = cut.load(Identity.of(spec, _exploration().strategy, 0, 6))
    assert saved is not None and saved.sources is not None
    assert str(app.resolve()) in saved.sources  # the scenario's file, and not shmstress's
    assert not any("shmstress" in Path(name).parts for name in saved.sources)
    assert saved.shmstress == shmstress_code()
    saved.shmstress = "0.0 (another)"  # a checkpoint another shmstress saved: said, resumed
    cut.save(Identity.of(spec, _exploration().strategy, 0, 6), saved)
    lines: list[str] = []
    resumed = explore(spec, _exploration(6), checkpoint=Checkpointing(cut.path, log=lines.append))
    assert resumed.executions == 6 and len(lines) == 2, lines
    assert "saved by shmstress 0.0 (another), this is" in lines[0]
    app.write_text(app.read_text() + "\nWORKERS = 3\n")
    with pytest.raises(CheckpointError, match="changed"):
        explore(spec, _exploration(6), checkpoint=cut)


class _Planted:
    """A pickle that, if loaded, leaves a marker: what a planted checkpoint would run."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Callable[[str], int], tuple[str]]:
        return os.system, (f"touch {self.marker}",)


@pytest.mark.faults
def test_a_checkpoint_not_ours_is_not_unpickled(tmp_path: Path) -> None:
    spec = program(PROGRAM).spec()
    own = tmp_path / "own.ckpt"
    explore(spec, _exploration(3), checkpoint=Checkpointing(own))
    marker = tmp_path / "ran"
    planted = tmp_path / "planted.ckpt"
    planted.write_bytes(pickle.dumps(_Planted(marker)))
    cases = {"symlink.ckpt": lambda p: p.symlink_to(own),
             "hardlink.ckpt": lambda p: os.link(planted, p)}
    if os.geteuid() == 0:  # another user's file: only root can make one
        cases["theirs.ckpt"] = lambda p: (shutil.copy(planted, p), os.chown(p, 65534, 65534))
    for name, make in cases.items():
        path = tmp_path / name
        make(path)
        with pytest.raises(CheckpointError, match="not a regular file of uid") as err:
            explore(spec, _exploration(3), checkpoint=Checkpointing(path))
        assert "\n" not in str(err.value)
    assert not marker.exists()
    (tmp_path / "hardlink.ckpt").unlink()
    with pytest.raises(CheckpointError, match="is not a shmstress checkpoint"):
        explore(spec, _exploration(3), checkpoint=Checkpointing(planted))  # ours: read, refused
    assert marker.exists()  # the planted pickle does run code once read: hence the check
