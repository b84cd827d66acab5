"""The repository's three source folders are one import namespace, and the wheel says so."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE_ROOTS = {"harness": "shmstress", "tracker": "shmstress.trackers",
                "reports": "shmstress.reports"}


def _pyproject() -> dict[str, object]:
    with (ROOT / "pyproject.toml").open("rb") as handle:
        return tomllib.load(handle)


def _packages_on_disk() -> set[str]:
    found = {"shmstress"}
    for folder in SOURCE_ROOTS:
        root = ROOT / folder
        for init in root.glob("shmstress/**/__init__.py"):
            found.add(".".join(init.parent.relative_to(root).parts))
    return found


def test_every_package_on_disk_is_listed_for_the_wheel_and_nothing_else() -> None:
    setuptools = _pyproject()["tool"]["setuptools"]  # type: ignore[index]
    listed = set(setuptools["packages"])
    assert listed == _packages_on_disk()
    assert all(name == "shmstress" or name.startswith("shmstress.") for name in listed)


def test_each_source_folder_maps_into_the_namespace() -> None:
    package_dir = _pyproject()["tool"]["setuptools"]["package-dir"]  # type: ignore[index]
    for folder, package in SOURCE_ROOTS.items():
        path = f"{folder}/{package.replace('.', '/')}"
        assert package_dir[package] == path
        assert (ROOT / path).is_dir()
    assert not (ROOT / "harness" / "shmstress" / "__init__.py").exists(), (
        "shmstress is a namespace package spanning three folders: an __init__.py in one "
        "of them would hide the others from mypy and import-linter"
    )
    assert (ROOT / "harness" / "shmstress" / "py.typed").is_file()


def test_no_dra_role_or_parameter_is_named_outside_the_dra_tracker() -> None:
    """Generic means generic: the engine and the reports know no tracker's roles or
    parameters (the dra tracker's are read from the class, not written down elsewhere)."""
    from shmstress.trackers.dra.tracker import DraTracker

    names = [*DraTracker.roles, *DraTracker.parameters]
    assert names, "the dra tracker declares roles and parameters"
    pattern = re.compile(r"\b(" + "|".join(
        re.escape(name) for name in [*names, *(n.replace("-", "_") for n in names)]) + r")s?\b")
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for folder in (ROOT / "harness", ROOT / "reports")
        for path in sorted(folder.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert not found, "\n".join(found)


def test_the_docs_exit_code_table_is_the_one_the_code_uses() -> None:
    """The table moved from the README to the docs' exit-code reference, which the site
    generates from ``ExitCode`` (tests/test_docs.py checks the built page)."""
    import importlib.util

    from shmstress.core.exit_reason import ExitCode

    spec = importlib.util.spec_from_file_location(
        "docs_reference_hook", ROOT / "docs" / "hooks" / "reference.py")
    assert spec is not None and spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    page = hook.generated_pages()[hook.EXIT_CODES_PAGE]
    for code in ExitCode:
        assert f"| {code.value} | {code.describe()} | {code.advice()} |" in page, code
