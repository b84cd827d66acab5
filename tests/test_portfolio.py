"""The portfolio, controlled and plain mode's default: turns by seed, scripting kept, bugs a
single PCT depth misses found, replayable bundles naming the member, and coverage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shmstress.cli.main import main
from shmstress.controlled.strategies import (
    DEFAULT,
    Portfolio,
    PortfolioSpec,
    RandomWalkSpec,
    exploring_strategy,
    spec_named,
)
from shmstress.controlled.strategies.base import Scripting, acting
from shmstress.controlled.strategies.portfolio import DEFAULT_MIX, LEAD

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
TICKETS = f"{EXAMPLES / 'counter_tracker.py'}:TicketTracker"


def _portfolio(seed: int) -> Portfolio:
    strategy = exploring_strategy(PortfolioSpec(), seed, 3, 500)
    assert isinstance(strategy, Portfolio)
    return strategy


def _turns(seed: int, executions: int) -> list[tuple[str, int]]:
    """(member, execution seed) of each execution."""
    portfolio = _portfolio(seed)
    out = []
    for _ in range(executions):
        assert portfolio.new_execution()
        out.append((portfolio.active.spec.short(), portfolio.next_u64()))
    return out


def test_the_default_is_the_portfolio() -> None:
    assert DEFAULT == "portfolio"
    assert spec_named(DEFAULT).describe() == "portfolio"


def test_members_take_turns_by_the_mix_and_draw_from_the_run_seed() -> None:
    executions = max(stage.start for stage in DEFAULT_MIX.stages) + 20
    first = _turns(7, executions)
    assert first == _turns(7, executions)  # the same seed: the same members, the same seeds
    other = _turns(8, executions)
    assert [m for m, _ in other] == [m for m, _ in first]  # turns depend on the index only
    assert [s for _, s in other] != [s for _, s in first]
    portfolio = _portfolio(7)
    expected = [DEFAULT_MIX.members[portfolio.member_of(i)].short()
                for i in range(executions)]
    # DPOR, driven here without steps, completes its search in its first turn and leaves
    # the cycle: its later turns go to the next member; every other turn is as the mix says
    turn = expected.index("dpor")
    assert first[turn][0] == "dpor"
    assert [m for m, _ in first[turn + 1:]].count("dpor") == 0
    assert all(m == e for (m, _), e in zip(first, expected, strict=True) if e != "dpor")
    assert {m for m, _ in first} == {s.short() for s in DEFAULT_MIX.members}


def test_the_random_walk_member_keeps_its_scripts_and_pct_its_leases() -> None:
    portfolio = _portfolio(1)
    kinds = []
    for _ in range(6):
        portfolio.new_execution()
        member = acting(portfolio)
        assert member is portfolio.active
        kinds.append((member.spec.name, isinstance(member, Scripting)))
    assert ("random_walk", True) in kinds and ("pct", False) in kinds
    assert all(scripting == (name == "random_walk") for name, scripting in kinds)


def test_the_default_finds_events_unordered_and_its_bundle_names_the_member(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """PCT at depth 3 with the demote rule finds this race in 0 of 10 runs of 1,000
    executions (README); the portfolio's random walk and aside members find it."""
    code = main(["run", "--mode", "controlled", "--variant", "events-unordered", "--seed", "6",
                 "--executions", "200", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 1, out
    (bundle,) = tmp_path.glob("*.json")
    strategy = json.loads(bundle.read_text())["strategy"]
    assert strategy["name"] == "portfolio"
    member, _, execution = strategy["member"].partition(" at execution ")
    assert member in {s.short() for s in DEFAULT_MIX.members} and int(execution) >= 1
    assert f"strategy portfolio ({strategy['member']})" in out
    assert main(["replay", str(bundle)]) == 1
    replayed = capsys.readouterr().out
    assert "reproduced" in replayed and f"portfolio ({strategy['member']})" in replayed


def test_roles_that_never_yield_are_thin_coverage_and_fail_when_coverage_is_required(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["run", "--mode", "controlled", "--tracker", TICKETS, "--variant", "locked",
            "--executions", "12", "--out", str(tmp_path)]
    assert main(args) == 0
    clean = capsys.readouterr().out
    assert "covered: 12 executions (random walk: " in clean
    assert "thin coverage: no role ever yielded" in clean
    assert main([*args, "--require-coverage"]) == 5
    assert "--require-coverage: exit 5" in capsys.readouterr().out


def test_a_tracker_whose_roles_yield_is_not_thin(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--mode", "controlled", "--variant", "fixed", "--executions", "6",
                 "--require-coverage", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "covered: 6 executions" in out and "thin coverage" not in out


def test_plain_code_cut_at_the_step_bound_is_thin_coverage(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["test", f"{EXAMPLES / 'plain' / 'counter.py'}:locked", "--max-steps", "4",
            "--executions", "3", "--seed", "1", "--quiet", "--out", str(tmp_path)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "controlled, portfolio, seed 1" in out and "covered: 3 executions" in out
    assert "thin coverage: every execution reached --max-steps" in out
    assert main([*args, "--require-coverage"]) == 5


def test_dpor_leads_where_the_tracker_declares_what_its_steps_touch(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The DRA tracker declares its accesses: the default's first executions are DPOR's, and
    the seed race is found within them (random walk and PCT need about 20); a tracker that
    declares nothing starts with the usual cycle (see the thin-coverage test: random walk)."""
    assert main(["run", "--mode", "controlled", "--variant", "gather-unchecked",
                 "--scenario", "seed-race", "--seed", "1", "--executions", str(LEAD),
                 "--out", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    (bundle,) = tmp_path.glob("*.json")
    member = json.loads(bundle.read_text())["strategy"]["member"]
    assert member.startswith("dpor"), member
    assert int(member.rpartition(" at execution ")[2]) <= LEAD
    assert "the race starts at point" in out  # the explanation reaches back to the stale read
    assert main(["replay", str(bundle)]) == 1
    assert "reproduced" in capsys.readouterr().out


def test_random_walk_and_dpor_lead_on_plain_code_and_a_complete_dpor_hands_over() -> None:
    from shmstress.controlled.strategies.portfolio import PLAIN_LEAD, PLAIN_MIX

    portfolio = Portfolio(3, lambda spec, seed: exploring_strategy(spec, seed, 3, 500),
                          PLAIN_MIX)
    taken = []
    for _ in range(PLAIN_LEAD + 5):
        assert portfolio.new_execution()
        taken.append(portfolio.active.spec.short())
    # driven without steps DPOR's search is complete after one execution: its turns in the
    # lead go to random walk, and the run goes on with the cycle after the lead
    assert taken[:2] == ["random walk", "dpor"] and "dpor" not in taken[2:]
    assert set(taken[:PLAIN_LEAD]) == {"random walk", "dpor"}
    assert "pct depth 2" in taken[PLAIN_LEAD:]


def test_the_random_walk_member_runs_what_random_walk_alone_runs_with_the_seed() -> None:
    """Its turns are random walk's own executions in order, so the portfolio finds what
    random walk finds in k executions by random walk's k-th turn, whatever the draws."""
    from shmstress.controlled.strategies.portfolio import PLAIN_MIX

    portfolio = Portfolio(11, lambda spec, seed: exploring_strategy(spec, seed, 3, 500),
                          PLAIN_MIX)
    turns = []
    for _ in range(12):
        assert portfolio.new_execution()
        if portfolio.active.spec.short() == "random walk":
            turns.append(portfolio.next_u64())
    alone = exploring_strategy(RandomWalkSpec(), 11, 3, 500)
    expected = []
    for _ in turns:
        assert alone.new_execution()
        expected.append(alone.next_u64())
    assert turns and turns == expected
