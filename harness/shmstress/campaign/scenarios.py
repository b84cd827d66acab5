"""Plain-code scenarios as campaign trials: which ones a command line names, and one trial
of one, explored and kept as ``pytest --stress-report`` keeps a ``@concurrency_test``'s run.

A scenario is named ``FILE:function`` as its user typed it, and its records, bundle names
and config keys say it so; a directory stands for every ``@concurrency_test`` in the
Python files under it. Both are found by reading the files' syntax, not by importing them:
the campaign process must not run the user's module-level code outside the engine's
control (each execution imports it afresh, under the instrumented primitives). So are a
``@concurrency_test``'s arguments that shape its session (``SESSION_OPTIONS``: what is
traced, its bounds, whether code outside control is accepted), which a trial runs with as
pytest would; its strategy, seed and executions are the grid's. An argument that is not a
literal cannot be read that way, and is refused in one line rather than dropped.
"""

from __future__ import annotations

import ast
import shlex
from dataclasses import dataclass
from pathlib import Path

from shmstress.analysis.plain_story import plain_story
from shmstress.analysis.swimlane import Swimlane, plain_swimlane
from shmstress.campaign.bundles import campaign_bundle_path, swimlane_path, write_swimlane
from shmstress.campaign.grid import CONTROLLED, FREE, TrialSpec, located
from shmstress.campaign.record import scenario_outcome, scenario_record
from shmstress.controlled.strategies import spec_named
from shmstress.core.errors import ScenarioError
from shmstress.plain.runner import Exploration, PlainResult, explore
from shmstress.plain.scenario import ScenarioRef
from shmstress.plain.spec import FreeSpec, PlainSpec, SessionOptions
from shmstress.repro.plain_bundle import from_outcome, write_plain_bundle

DECORATOR = "concurrency_test"
SESSION_OPTIONS = ("trace", "auto_trace", "max_steps", "max_processes", "accept_uncontrolled")
"""The decorator's arguments a campaign's trial honours; the rest (strategy, seed,
executions) are what the campaign's grid varies."""
_SKIPPED_FOLDERS = frozenset({"site-packages", "dist-packages", "node_modules", "__pycache__"})


def named_scenarios(given: list[str]) -> tuple[str, ...]:
    """The scenarios of the command line's ``FILE:function`` and directory arguments, in
    order, each checked: one line (``ScenarioError``) for the first that is not there."""
    found: list[str] = []
    for text in given:
        folder = Path(text)
        if ":" not in text and folder.is_dir():
            under = concurrency_tests_under(folder)
            if not under:
                raise ScenarioError(f"{text} holds no @{DECORATOR} function")
            found += under
        else:
            check_scenario(text)
            found.append(text)
    for text in found:  # its decorator's arguments, read now: a bad one before any trial
        session_options(ScenarioRef.parse(text))
    return tuple(dict.fromkeys(found))


def check_scenario(text: str, origin: str = "") -> None:
    """Refuse a ``FILE:function`` whose file does not define the function (at module level,
    as a scenario must be), before any trial runs."""
    ref = ScenarioRef.parse(located(text, origin))  # its syntax, and that the file exists
    if ref.file is None:
        return  # MODULE:function is found on sys.path only when a trial imports it
    top = ref.function.split(".")[0]
    if top not in _module_names(_syntax(ref.file)):
        raise ScenarioError(f"{text}: {ref.file} defines no {ref.function!r} at module level")


def concurrency_tests_under(folder: Path) -> list[str]:
    """``FILE:function`` of every module-level ``@concurrency_test`` function in the Python
    files under ``folder`` (hidden folders and installed packages left out), sorted."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        relative = path.relative_to(folder).parts
        if any(part.startswith(".") or part in _SKIPPED_FOLDERS for part in relative[:-1]):
            continue
        found += [f"{path.as_posix()}:{name}" for name in _decorated(_syntax(path))]
    return found


def _syntax(path: Path) -> ast.Module:
    try:
        return ast.parse(path.read_bytes(), filename=str(path))
    except (SyntaxError, ValueError, OSError) as exc:
        raise ScenarioError(f"cannot read {path} as Python: {exc}") from None


def _module_names(module: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in module.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {target.id for target in targets if isinstance(target, ast.Name)}
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names |= {alias.asname or alias.name.split(".")[0] for alias in node.names}
    return names


def _decorated(module: ast.Module) -> list[str]:
    """Module-level functions decorated ``@concurrency_test(...)`` (or ``@x.concurrency_test``)."""
    return [node.name for node in module.body
            if isinstance(node, ast.FunctionDef) and _decorator(node) is not None]


def _decorator(node: ast.FunctionDef) -> ast.expr | None:
    """``node``'s ``@concurrency_test`` decorator, if it has one."""
    for decorator in node.decorator_list:
        called = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = (called.id if isinstance(called, ast.Name)
                else called.attr if isinstance(called, ast.Attribute) else None)
        if name == DECORATOR:
            return decorator
    return None


def session_options(ref: ScenarioRef) -> SessionOptions:
    """What the ``@concurrency_test`` of ``ref`` says of its session, read from the file's
    syntax; one ScenarioError line for such an argument that is not a literal."""
    if ref.file is None:
        return SessionOptions()
    top = ref.function.split(".")[0]
    node = next((n for n in _syntax(ref.file).body
                 if isinstance(n, ast.FunctionDef) and n.name == top), None)
    decorator = _decorator(node) if node is not None else None
    if not isinstance(decorator, ast.Call):
        return SessionOptions()
    given: dict[str, object] = {}
    for keyword in decorator.keywords:
        if keyword.arg not in SESSION_OPTIONS:
            continue
        try:
            value = ast.literal_eval(keyword.value)
        except ValueError:
            raise ScenarioError(
                f"{ref.file}:{keyword.value.lineno}: {keyword.arg}= of @{DECORATOR} "
                f"{ref.function} is not a literal; a campaign reads it without importing the "
                "file, so write it as one") from None
        given[keyword.arg] = _checked(ref, keyword.arg, value)
    return SessionOptions(**given)  # type: ignore[arg-type]  # each checked by _checked


def _checked(ref: ScenarioRef, name: str, value: object) -> object:
    """``value`` of the decorator's argument ``name`` as the session takes it, or one
    ScenarioError line if it is not of the argument's type."""
    default = getattr(SessionOptions(), name)
    if isinstance(default, tuple) and isinstance(value, list | tuple) and all(
            isinstance(item, str) for item in value):
        return tuple(value)
    if type(value) is type(default):  # a bool is no int here, nor an int a bool
        return value
    wanted = "a tuple of names" if isinstance(default, tuple) else type(default).__name__
    raise ScenarioError(f"{ref.file}: {name}={value!r} of @{DECORATOR} {ref.function} is not "
                        f"{wanted}")


@dataclass(frozen=True)
class ScenarioTrialRun:
    """One trial's exploration of a scenario, with what a failure brought."""

    trial: TrialSpec
    spec: PlainSpec
    result: PlainResult
    accept_uncontrolled: bool = False  # its @concurrency_test's

    @property
    def scenario(self) -> str:
        assert self.trial.scenario is not None
        return self.trial.scenario

    @property
    def interrupted(self) -> bool:
        return self.result.interrupted

    def verdict(self) -> str:
        failing = self.result.failing
        if failing is not None and failing.failed and failing.failure is not None:
            return f"a failure ({failing.failure.message.splitlines()[0]})"
        return scenario_outcome(self.result, self.accept_uncontrolled)[0]

    def keep(self, out_dir: Path, started_at: str) -> tuple[dict[str, object], bool]:
        """Write a failure's bundle and swimlane under ``out_dir`` and make the trial's
        record; (the record, whether a bundle was written)."""
        result, trial = self.result, self.trial
        failing = result.failing
        bundle = picture = None
        if failing is not None and failing.failed:
            made = from_outcome(self.scenario, self.spec, result.strategy,
                                result.exploration.seed, result.failing_index, failing)
            bundle = campaign_bundle_path(trial.campaign, made)
            # a trial's bundle is named after its seed and execution: a rerun after a kill
            # between bundle and line finds the same execution and writes the same file
            write_plain_bundle(made, out_dir / bundle)
            if write_swimlane(scenario_swimlane(self.scenario, result),
                              out_dir / swimlane_path(bundle)) is not None:
                picture = swimlane_path(bundle).as_posix()
        record = scenario_record(
            result, scenario=self.scenario, campaign=trial.campaign, trial=trial.trial,
            started_at=started_at, bundle=bundle.as_posix() if bundle else None,
            swimlane=picture, rerun_command=rerun_command(trial), results_dir=out_dir,
            accept_uncontrolled=self.accept_uncontrolled)
        return record, bundle is not None


def scenario_swimlane(scenario: str, result: PlainResult) -> Swimlane | None:
    """The swimlane of the search's failing execution, titled with the scenario and seed."""
    failing = result.failing
    if failing is None or not failing.failed:
        return None
    title = f"{scenario}, seed {result.exploration.seed}: who did what when"
    return plain_swimlane(failing, plain_story(failing), title)


def rerun_command(trial: TrialSpec) -> str:
    """``shmstress test`` of the trial's scenario, its strategy, seed and budget."""
    assert trial.scenario is not None
    drive = (["--mode", "free", "--noise", f"{trial.noise:g}"] if trial.mode == FREE
             else ["--strategy", trial.strategy])
    return shlex.join(["shmstress", "test", trial.scenario, *drive, "--seed", str(trial.seed),
                       "--executions", str(trial.executions)])


def run_scenario_trial(trial: TrialSpec) -> ScenarioTrialRun:
    """Explore the trial's scenario with its strategy (free: its noise), seed and budget;
    a signal ends it as ``ExplorationInterrupted``, a KeyboardInterrupt."""
    assert trial.scenario is not None
    ref = ScenarioRef.parse(located(trial.scenario, trial.origin))
    options = session_options(ref)
    spec = options.spec(ref, FreeSpec(trial.noise) if trial.mode != CONTROLLED else None)
    exploration = Exploration(spec_named(trial.strategy), trial.seed, trial.executions)
    return ScenarioTrialRun(trial, spec, explore(spec, exploration),
                            options.accept_uncontrolled)
