"""Each strategy's spec is its own object: it carries its parameters, checks them when it is
made, says how a command line and a bundle name it, and builds its strategy; nothing else
asks a spec its name to decide what to do."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

import msgspec
import pytest

from shmstress.cli.main import main
from shmstress.controlled.strategies import (
    EXPLORING,
    SPECS,
    UNBOUNDED,
    DporSpec,
    ExhaustiveSpec,
    PctSpec,
    PortfolioSpec,
    RandomWalkSpec,
    StrategySpec,
    exploring_strategy,
    spec_named,
    spec_of,
)
from shmstress.core.errors import BundleError, ConfigError
from shmstress.repro.bundle_schema import StrategyDoc, strategy_doc, strategy_of

HARNESS = Path(__file__).resolve().parents[1] / "harness" / "shmstress"

# every search with parameters away from their defaults, and at them
SPECS_TO_TRY = [
    PortfolioSpec(), PortfolioSpec(member="pct depth 2 at execution 7"),
    PctSpec(), PctSpec(depth=5, spin="aside"), RandomWalkSpec(),
    ExhaustiveSpec(), ExhaustiveSpec(bound=0), DporSpec(), DporSpec(bound=3),
]


@pytest.mark.parametrize(("make", "fragment"), [
    (lambda: PctSpec(depth=0), "--depth must be >= 1, got 0"),
    (lambda: PctSpec(spin="sideways"), "--spin must be one of demote, aside, got sideways"),
    (lambda: ExhaustiveSpec(bound=-1), "--bound must be >= 0, got -1"),
    (lambda: DporSpec(bound=-2), "--bound must be >= -1 (or -1: none), got -2"),
])
def test_a_spec_checks_its_parameters_when_it_is_made(make: object, fragment: str) -> None:
    with pytest.raises(ConfigError) as error:
        make()  # type: ignore[operator]
    assert str(error.value) == fragment


def test_each_search_takes_only_its_own_parameters_by_name() -> None:
    assert spec_named("pct", depth=4) == PctSpec(depth=4)
    assert spec_named("dpor") == DporSpec(bound=UNBOUNDED)  # its own default, not another's
    assert spec_named("exhaustive").bound == 2
    with pytest.raises(ConfigError, match=r"^--depth applies only with --strategy pct$"):
        spec_named("dpor", depth=2)
    with pytest.raises(ConfigError,
                       match=r"^--bound applies only with --strategy exhaustive or dpor$"):
        spec_named("random_walk", bound=1)
    with pytest.raises(ConfigError, match=r"^strategy pct takes no member$"):
        spec_named("pct", member="pct depth 3 at execution 2")
    with pytest.raises(ConfigError, match=r"^unknown strategy 'bogus'; choose from portfolio"):
        spec_named("bogus")


def test_a_spec_given_as_an_object_takes_no_parameter_beside_it() -> None:
    chosen = PctSpec(depth=2)
    assert spec_of(chosen) is chosen
    assert spec_of("pct", depth=None, spin="aside") == PctSpec(spin="aside")
    with pytest.raises(ConfigError, match="depth: give them to PctSpec itself"):
        spec_of(chosen, depth=4)


@pytest.mark.parametrize("spec", SPECS_TO_TRY, ids=str)
def test_a_spec_survives_a_bundle_and_its_command_line(spec: StrategySpec) -> None:
    stored = msgspec.to_builtins(strategy_doc(spec))
    assert stored["name"] == spec.name
    assert set(stored) - {"name"} <= {item.name for item in fields(spec)}  # its own knobs only
    assert strategy_of(strategy_doc(spec)) == spec
    options = spec.options()
    assert options[:2] == ["--strategy", spec.name]
    given = dict(zip(options[2::2], options[3::2], strict=True))
    knobs = {flag.removeprefix("--"): int(value) if value.lstrip("-").isdigit() else value
             for flag, value in given.items()}
    rebuilt = spec_of(spec.name, **knobs)
    assert rebuilt == (spec if not isinstance(spec, PortfolioSpec) else PortfolioSpec())


@pytest.mark.parametrize(("doc", "fragment"), [
    (StrategyDoc(name="pct", bound=2), "field strategy: --bound applies only with --strategy"),
    (StrategyDoc(name="pct", depth=0), "field strategy: --depth must be >= 1"),
    (StrategyDoc(name="noise"), "field strategy.name: unknown strategy 'noise'"),
])
def test_a_bundles_strategy_that_cannot_be_is_one_line(doc: StrategyDoc, fragment: str) -> None:
    with pytest.raises(BundleError) as error:
        strategy_of(doc)
    assert str(error.value).startswith(fragment) and "\n" not in str(error.value)


@pytest.mark.parametrize("name", EXPLORING)
def test_every_search_builds_from_its_spec_and_no_other_does(name: str) -> None:
    built = exploring_strategy(spec_named(name), seed=1, workers=3, max_steps=100)
    assert type(built.spec) is SPECS[name]
    for other in set(SPECS) - set(EXPLORING):
        with pytest.raises(ConfigError, match="is not a search"):
            exploring_strategy(spec_named(other), seed=1, workers=3, max_steps=100)


def test_no_code_outside_the_strategies_decides_by_a_strategys_name() -> None:
    names = "|".join(map(re.escape, SPECS))
    switch = re.compile(rf"""\.name\s*(==|!=|in|not in)\s*\(?[^)\n]*["']({names})["']""")
    found = [f"{path.relative_to(HARNESS)}:{number}: {line.strip()}"
             for path in HARNESS.rglob("*.py")
             for number, line in enumerate(path.read_text().splitlines(), 1)
             if switch.search(line)]
    assert found == []


def test_a_wrong_parameter_on_either_command_line_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str]
) -> None:
    for command in (["run", "--mode", "controlled", "--strategy", "dpor", "--depth", "2"],
                    ["test", "x.py:f", "--strategy", "dpor", "--depth", "2"]):
        assert main(command) == 2
        err = capsys.readouterr().err.strip()
        assert "--depth applies only with --strategy pct" in err and "\n" not in err
