"""shmstress as a user installs it: a wheel, not editable, in a fresh venv, beside a project
that has packages of its own named ``harness``, ``tracker`` and ``reports``.

The wheel is built from this checkout and installed without its dependencies; the fresh
venv reaches them through a ``.pth`` line naming this venv's site-packages (a plain path
entry: the ``.pth`` files there, among them the editable install's finder, are not run).
So the test needs no network, and the ``shmstress`` it runs is the wheel's alone.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

USER_TRACKER = '''\
"""A user's tracker, written against shmstress.api alone, in a project with its own
``tracker`` package (which must not shadow anything of shmstress)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from shmstress.api import Invariant, Phase, RoleSpec, Runtime, Setup, Tracker, Workers
from tracker import LABEL


class Lost(Invariant):
    name = "no-lost-increment"
    summary = "every increment is counted"
    fields = ("counted", "done")

    def render(self, fields: Mapping[str, int], workers: Workers,
               params: Mapping[str, int]) -> str:
        return f"counted {fields['counted']} of {fields['done']} increments"

    def check_at_rest(self, tracker: Counter) -> list[Found]:
        done = int(tracker.done.np.sum())
        counted = int(tracker.value.mv[0])
        return [] if counted == done else [Found(self.name, {"counted": counted, "done": done})]


class Adder:
    def __init__(self, tracker: Counter, index: int) -> None:
        self.t = tracker
        self.runtime: Runtime = tracker.runtime
        self.slot = tracker.runtime_slots[index]

    def step(self, phase: Phase) -> bool:
        if phase is not Phase.RUN:
            return False
        self.runtime.point(LABEL)
        seen = int(self.t.value.mv[0])
        self.runtime.point("write back")
        self.t.value.mv[0] = seen + 1
        self.t.done.mv[self.slot] += 1
        return True


class Counter(Tracker):
    name: ClassVar[str] = "user-counter"
    summary: ClassVar[str] = "two adders, one unlocked counter"
    variants: ClassVar[Mapping[str, str]] = {"racy": "read, then write back (racy)"}
    roles: ClassVar[Mapping[str, RoleSpec]] = {"adder": RoleSpec(Adder, "adds one", count=2)}
    invariants: ClassVar[tuple[Invariant, ...]] = (Lost(),)

    def __init__(self, setup: Setup, variant: str, params: Mapping[str, int]) -> None:
        self.runtime = setup.runtime
        self.value = setup.array("user.value", 1)
        self.done = setup.array("user.done", setup.workers("adder"))
        self.runtime_slots = list(range(setup.workers("adder")))
'''


def _site_packages() -> str:
    return sysconfig.get_paths()["purelib"]


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with shmstress installed from a wheel of this checkout."""
    base = tmp_path_factory.mktemp("install")
    source = base / "source"  # a copy: building in the checkout would leave build/ in it
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", ".tox", "build", "*.egg-info", "__pycache__", "shmstress-out", "out",
        ".*_cache", ".shmstress"))
    wheels = base / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--no-build-isolation", "--wheel-dir", str(wheels), str(source)],
                   check=True, capture_output=True, timeout=300)
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; "
                              "print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    Path(purelib, "outer-dependencies.pth").write_text(_site_packages() + "\n")
    [wheel] = wheels.glob("shmstress-*.whl")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install",
                    "--quiet", "--no-deps", "--no-index", str(wheel)],
                   check=True, capture_output=True, timeout=300)
    return venv


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A user project with packages of its own called harness, tracker and reports."""
    root = tmp_path_factory.mktemp("project")
    for package in ("harness", "tracker", "reports"):
        (root / package).mkdir()
        (root / package / "__init__.py").write_text(
            f'"""The user\'s own {package} package."""\n\nLABEL = "read the counter"\n')
    (root / "my_tracker.py").write_text(USER_TRACKER.replace(
        "from shmstress.api import Invariant,", "from shmstress.api import Found, Invariant,"))
    return root


def _run(venv: Path, project: Path, *args: str, timeout: float = 300
         ) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["PATH"] = f"{venv / 'bin'}:{env.get('PATH', '')}"
    return subprocess.run(list(args), cwd=project, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)


def test_the_wheel_installs_one_namespace_and_no_generic_name(fresh: Path, project: Path
                                                              ) -> None:
    done = _run(fresh, project, str(fresh / "bin" / "python"), "-c", textwrap.dedent("""
        import importlib.metadata, shmstress.api, shmstress.trackers.dra.tracker, tracker
        top = importlib.metadata.distribution("shmstress").read_text("top_level.txt")
        print(shmstress.api.__file__)
        print(tracker.__file__)
        print(sorted(set(top.split())))
    """))
    assert done.returncode == 0, done.stderr
    api_file, user_tracker, top_level = done.stdout.splitlines()
    assert Path(api_file).is_relative_to(fresh), "shmstress must come from the wheel"
    assert Path(user_tracker).is_relative_to(project), "the user's tracker package is theirs"
    assert top_level == "['shmstress']"


def test_a_built_in_tracker_runs_from_the_user_project(fresh: Path, project: Path) -> None:
    done = _run(fresh, project, str(fresh / "bin" / "shmstress"), "run", "--tracker", "dra",
                "--variant", "gather-unchecked", "--seed", "3", "--quiet", "--out", "out")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "gather-complete" in done.stdout and "explanation:" in done.stdout


def test_a_user_tracker_runs_and_type_checks_against_the_api(fresh: Path, project: Path) -> None:
    done = _run(fresh, project, str(fresh / "bin" / "shmstress"), "run", "--tracker",
                "my_tracker.py:Counter", "--seed", "5", "--quiet", "--out", "out",
                "--duration", "1")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "no-lost-increment at rest" in done.stdout
    mypy = _run(fresh, project, sys.executable, "-m", "mypy", "--strict", "--no-incremental",
                "--python-executable", str(fresh / "bin" / "python"), "my_tracker.py")
    assert mypy.returncode == 0, mypy.stdout + mypy.stderr


def _docs_blocks(page: str, language: str, start: str, end: str) -> list[str]:
    """The ``language`` code blocks of a documentation page (``docs/PAGE``) between the
    headings ``start`` and ``end``: what a user copies, so what must run as written."""
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    section = text[text.index(start):text.index(end, text.index(start))]
    return re.findall(rf"```{language}\n(.*?)```", section, flags=re.DOTALL)


@pytest.mark.stress
def test_the_docs_pytest_examples_run_in_a_user_project(
    fresh: Path, tmp_path: Path
) -> None:
    stress = _docs_blocks("how-to/pytest-trackers.md", "python", "# Stress a tracker in pytest",
                          "**Failures are tried first next time.**")
    plain = _docs_blocks("tutorial/first-pytest-test.md", "python", "## Write the test",
                         "## When it fails")
    assert len(stress) == 2 and len(plain) == 1
    project = tmp_path / "project"
    project.mkdir()
    for index, block in enumerate([*stress, *plain]):
        (project / f"test_readme_{index}.py").write_text(block)
    done = _run(fresh, project, str(fresh / "bin" / "python"), "-m", "pytest",
                "-p", "no:cacheprovider", "-rA", "--junitxml=junit.xml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 passed" in done.stdout, done.stdout
    assert "from shmstress" not in done.stdout  # nothing failed, nothing to show
    junit = (project / "junit.xml").read_text(encoding="utf-8")
    assert junit.count('<property name="seed"') == 2  # one per shmstress_run
    plugin = _run(fresh, project, str(fresh / "bin" / "python"), "-m", "pytest",
                  "--fixtures", "-p", "no:cacheprovider")
    assert "shmstress_run(variant=None, *, expect=" in plugin.stdout, plugin.stdout
    assert "site-packages/shmstress/pytest/plugin.py" in plugin.stdout  # the wheel's

    # The ini example, unchanged, in a project whose tests run from a subdirectory.
    (toml,) = _docs_blocks("how-to/pytest-trackers.md", "toml", "# Stress a tracker in pytest",
                           "**Failures are tried first next time.**")
    ini_project = tmp_path / "ini-project"
    (ini_project / "stress").mkdir(parents=True)
    (ini_project / "tests").mkdir()
    (ini_project / "pyproject.toml").write_text(toml)
    shutil.copy(ROOT / "examples" / "counter_tracker.py",
                ini_project / "stress" / "ticket_tracker.py")
    (ini_project / "tests" / "test_tickets.py").write_text(textwrap.dedent("""
        import pytest

        @pytest.mark.stress
        def test_the_race_is_caught(shmstress_run):
            shmstress_run("racy", expect="violation", duration=10)

        @pytest.mark.stress
        def test_the_lock_holds(shmstress_run):
            shmstress_run("locked", duration=0.5)

        @pytest.mark.stress
        def test_the_race_is_not_claimed_clean(shmstress_run):
            shmstress_run("racy", duration=10)
    """))
    ran = _run(fresh, ini_project / "tests", str(fresh / "bin" / "python"), "-m", "pytest",
               "-p", "no:cacheprovider")
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "2 passed" in ran.stdout and "1 failed" in ran.stdout, ran.stdout
    assert "broke unique-tickets" in ran.stdout or "broke no-lost-update" in ran.stdout
    assert list((ini_project / ".shmstress" / "failures").glob("*.json"))
