"""Validating a tracker class before anything is built, so a malformed plugin fails in one line.

``check_class`` reads every class attribute the harness relies on (variants,
roles, parameters, invariants, scenarios) and raises one ``PluginError`` that
names the tracker and every problem. Every invariant is rendered, scoped and
given its outcome for sample fields (all zero, all one, distinct small values),
so one that raises or prints several lines is caught here, not after a long run.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import replace

from shmstress.core.control import MAX_VIOLATION_FIELDS
from shmstress.core.errors import PluginError
from shmstress.core.workers import Workers, number_workers
from shmstress.plugin.tracker import Invariant, Parameter, RoleSpec, Scenario, Tracker
from shmstress.plugin.words import Scope

_SAMPLE_PID = 4242


def check_class(candidate: object, origin: str) -> type[Tracker]:
    """``candidate`` as a tracker class, or a PluginError naming every problem in one line."""
    if not (inspect.isclass(candidate) and issubclass(candidate, Tracker)):
        what = candidate.__name__ if inspect.isclass(candidate) else type(candidate).__name__
        raise PluginError(f"{origin}: expected a subclass of shmstress.api.Tracker, got {what}")
    problems = class_problems(candidate)
    if problems:
        raise PluginError(f"{origin}: " + "; ".join(problems))
    return candidate


def class_problems(cls: type[Tracker]) -> list[str]:
    """Every problem with the class attributes the harness relies on."""
    problems: list[str] = []
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name or any(c.isspace() for c in name):
        problems.append(f"name must be a non-empty string without spaces, got {name!r}")
    if not isinstance(getattr(cls, "summary", None), str):
        problems.append("summary must be a string (one line for `shmstress list`)")
    problems += _variant_problems(getattr(cls, "variants", None))
    roles = getattr(cls, "roles", None)
    problems += _role_problems(roles)
    role_names = set(roles) if isinstance(roles, Mapping) else set()
    parameters = getattr(cls, "parameters", None)
    problems += _parameter_problems(parameters)
    problems += _scenario_problems(getattr(cls, "scenarios", None), role_names,
                                   parameters if isinstance(parameters, Mapping) else {})
    problems += _invariant_problems(getattr(cls, "invariants", None), cls)
    try:
        inspect.signature(cls).bind("setup", "variant", {})
    except (TypeError, ValueError):
        problems.append("__init__ must accept (setup, variant, params)")
    return problems


def _variant_problems(value: object) -> list[str]:
    if not isinstance(value, Mapping) or not value:
        return ["variants must be a non-empty mapping of name to description"]
    bad = [k for k, v in value.items() if not (isinstance(k, str) and k and isinstance(v, str))]
    return [f"variants entries must be non-empty name -> description strings: {bad!r}"] if bad \
        else []


def _role_problems(roles: object) -> list[str]:
    if not isinstance(roles, Mapping) or not roles:
        return ["roles must be a non-empty mapping of role name to RoleSpec"]
    problems: list[str] = []
    for role, spec in roles.items():
        if not isinstance(role, str) or not role or any(c in role for c in "=, \t"):
            problems.append(f"role name {role!r} must be non-empty, without '=', ',' or spaces")
            continue
        if not isinstance(spec, RoleSpec):
            problems.append(f"role {role!r} must be a RoleSpec, got {type(spec).__name__}")
            continue
        build: object = spec.build  # a user's RoleSpec need not keep to its annotations
        if not callable(build):
            problems.append(f"role {role!r}: build must be callable (tracker, index) -> role")
        help_text: object = spec.help
        if not isinstance(help_text, str) or not help_text:
            problems.append(f"role {role!r}: help must be a non-empty string")
        counts = (spec.count, *spec.grid)
        if any(not isinstance(n, int) or isinstance(n, bool) or n < 1 for n in counts):
            problems.append(f"role {role!r}: count and grid must be integers >= 1")
        unknown = [r for r in spec.stops_after if r not in roles or r == role]
        if unknown:
            problems.append(f"role {role!r}: stops_after names {', '.join(map(str, unknown))}, "
                            "not another role of the tracker")
    cycle = _stop_cycle({r: s.stops_after for r, s in roles.items() if isinstance(s, RoleSpec)})
    if cycle:
        problems.append(f"roles stop after each other in a circle ({' -> '.join(cycle)}): "
                        "none of them would ever see STOP")
    return problems


def _stop_cycle(stops_after: Mapping[str, Sequence[str]]) -> list[str]:
    """A cycle among ``stops_after``, as the roles along it, or [] if there is none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(role: str) -> list[str]:
        state[role] = 1
        path.append(role)
        for after in stops_after.get(role, ()):
            if state.get(after) == 1:
                return [*path[path.index(after):], after]
            if after in stops_after and state.get(after) is None:
                found = visit(after)
                if found:
                    return found
        state[role] = 2
        path.pop()
        return []

    for role in stops_after:
        if state.get(role) is None:
            found = visit(role)
            if found:
                return found
    return []


def _parameter_problems(parameters: object) -> list[str]:
    if not isinstance(parameters, Mapping):
        return ["parameters must be a mapping of name to shmstress.api.Parameter"]
    problems = []
    for pname, param in parameters.items():
        if not isinstance(param, Parameter):
            problems.append(f"parameter {pname!r} must be a shmstress.api.Parameter, got "
                            f"{type(param).__name__}")
            continue
        problem = param.problem(str(pname), param.default)
        if problem:
            problems.append(f"default of parameter {problem}")
    return problems


def _scenario_problems(scenarios: object, roles: set[str],
                       parameters: Mapping[str, object]) -> list[str]:
    if not isinstance(scenarios, Mapping):
        return ["scenarios must be a mapping of name to shmstress.api.Scenario"]
    problems = []
    for name, scenario in scenarios.items():
        if not isinstance(scenario, Scenario):
            problems.append(f"scenario {name!r} must be a shmstress.api.Scenario")
            continue
        unknown = sorted(set(scenario.workers) - roles) + sorted(set(scenario.params) - set(
            parameters))
        if unknown:
            problems.append(f"scenario {name!r} names no role or parameter {', '.join(unknown)}")
        problems += [f"scenario {name!r}: {role} must have >= 1 worker"
                     for role, n in scenario.workers.items() if n < 1]
        for pname, value in scenario.params.items():
            param = parameters.get(pname)
            problem = param.problem(pname, value) if isinstance(param, Parameter) else None
            if problem:
                problems.append(f"scenario {name!r}: {problem}")
    return problems


def _invariant_problems(invariants: object, cls: type[Tracker]) -> list[str]:
    if not isinstance(invariants, Sequence) or isinstance(invariants, str) or not invariants:
        return ["invariants must be a non-empty sequence of shmstress.api.Invariant objects"]
    problems: list[str] = []
    seen: set[str] = set()
    for position, invariant in enumerate(invariants):
        name = getattr(invariant, "name", None)
        label = repr(name) if isinstance(name, str) else f"#{position + 1}"
        if not isinstance(invariant, Invariant):
            problems.append(f"invariant {label} must be an instance of a shmstress.api.Invariant "
                            "subclass")
            continue
        if not isinstance(name, str) or not name:
            problems.append(f"invariant {label} has no name")
        elif name in seen:
            problems.append(f"invariant {name!r} is declared twice")
        else:
            seen.add(name)
        if not isinstance(getattr(invariant, "summary", None), str):
            problems.append(f"invariant {label} summary must be a string")
        fields: object = getattr(invariant, "fields", None)
        if not isinstance(fields, tuple) or not all(isinstance(f, str) for f in fields):
            problems.append(f"invariant {label} fields must be a tuple of names")
        elif len(fields) > MAX_VIOLATION_FIELDS:
            problems.append(f"invariant {label} has {len(fields)} fields; at most "
                            f"{MAX_VIOLATION_FIELDS} are kept")
        else:
            problem = next((found for sample in sample_fields(fields)
                            if (found := render_problem(invariant, sample, cls))), None)
            if problem:
                problems.append(problem)
    return problems


def sample_fields(fields: tuple[str, ...]) -> list[dict[str, int]]:
    """Fields every ``render`` must word: all zero, all one, and distinct small values, so a
    render that only copes with zeros (a worker id past the list, a kind it forgot) fails
    here rather than after a long run."""
    return [dict.fromkeys(fields, 0), dict.fromkeys(fields, 1),
            {name: position + 1 for position, name in enumerate(fields)}]


def render_problem(invariant: Invariant, fields: Mapping[str, int], cls: type[Tracker]
                   ) -> str | None:
    """Why ``invariant`` cannot word these fields (render, scope or outcome), or None."""
    params = default_params(cls)
    try:
        text = invariant.render(fields, sample_workers(cls), params)
    except Exception as exc:
        return (f"invariant {invariant.name!r} render() raised {one_line(exc)} "
                f"for fields {dict(fields)}")
    if not isinstance(text, str) or not text.strip():
        return f"invariant {invariant.name!r} render() must return a non-empty string"
    if "\n" in text:
        return f"invariant {invariant.name!r} render() must return one line, got {text!r}"
    for method in ("scope", "outcome"):
        try:
            value = getattr(invariant, method)(fields, params)
        except Exception as exc:
            return (f"invariant {invariant.name!r} {method}() raised {one_line(exc)} "
                    f"for fields {dict(fields)}")
        expected = Scope if method == "scope" else (str, type(None))
        if not isinstance(value, expected):
            return (f"invariant {invariant.name!r} {method}() returned "
                    f"{type(value).__name__} for fields {dict(fields)}")
    return None


def sample_workers(cls: type[Tracker]) -> Workers:
    """The workers of a run with default counts, with made-up pids."""
    roles = getattr(cls, "roles", {})
    counts = {role: max(1, spec.count if isinstance(spec, RoleSpec) else 1)
              for role, spec in roles.items()}
    return Workers(replace(worker, pid=_SAMPLE_PID + worker.worker_id)
                   for worker in number_workers(roles, counts))


def default_params(cls: type[Tracker]) -> dict[str, int]:
    parameters = getattr(cls, "parameters", {})
    return {n: p.default for n, p in parameters.items() if isinstance(p, Parameter)}


def one_line(exc: BaseException) -> str:
    """An exception as `Type: first line of its message`, for one-line errors."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
