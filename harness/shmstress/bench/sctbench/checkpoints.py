"""``bench --suite sctbench --checkpoint DIR``: a suite that outlives its session.

The twins' runs at the paper's budget take CPU-hours (``fsbench_ok`` alone about five
on a small machine), longer than a session or a preemptible machine lasts. With a
directory, each trial keeps its exploration's checkpoint there while it runs
(``plain/checkpoint.py``: saved every minute and when a signal stops it), and its
result once it ended. Running the same command again with the same directory takes
the finished trials' results as they are, resumes each unfinished trial at the
execution where it stopped, and prints the table an uninterrupted run prints.

The directory belongs to one command: ``suite.json`` holds the options that decide
the trials (not ``--jobs``, which changes no figure), and another command is refused
in one line before anything runs. Every file is written whole (temporary file,
renamed); a result is written before its checkpoint is removed, so a kill in between
leaves a result and a stale checkpoint, never neither.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from shmstress.core.files import write_text_atomically
from shmstress.core.provenance import shmstress_code
from shmstress.plain.checkpoint import CheckpointError

FORMAT = 1
MANIFEST = "suite.json"
KINDS = ("Trial", "TwinFigures")  # the classes of ``run``'s results
_FLAGS = {"executions": "--executions", "seeds": "--seeds", "seed": "--seed",
          "programs": "--program", "strategies": "--strategy",
          "twin_executions": "--twin-executions", "twin_strategies": "--twin-strategy"}
"""The command-line option of each field of ``SuiteOptions``, for the refusal's words."""


class Task(Protocol):
    """What names a trial (``run.TrialTask``)."""

    @property
    def program(self) -> str: ...

    @property
    def strategy(self) -> str: ...

    @property
    def seed(self) -> int: ...

    @property
    def budget(self) -> int: ...


def _plain(value: object) -> Any:
    """``value`` as JSON reads it back (tuples become lists)."""
    return json.loads(json.dumps(value))


@dataclass(frozen=True)
class SuiteDirectory:
    """The checkpoints and results of one suite command's trials."""

    path: Path

    def claim(self, options: object, log: Callable[[str], None]) -> None:
        """Make the directory this command's, or refuse it if it is another's; say so if
        another shmstress wrote it (its checkpoints may then take other executions)."""
        manifest = self.path / MANIFEST
        mine = {"format": FORMAT, "options": _plain(asdict(options)),  # type: ignore[call-overload]
                "code": shmstress_code()}
        try:
            theirs = json.loads(manifest.read_text())
        except FileNotFoundError:
            write_text_atomically(manifest, json.dumps(mine, indent=2) + "\n",
                                  "the suite's checkpoint manifest")
            return
        except (OSError, ValueError) as exc:
            raise CheckpointError(f"checkpoint directory {self.path}: {MANIFEST} cannot be "
                                  f"read ({exc}): use another directory") from exc
        if not isinstance(theirs, dict) or theirs.get("format") != FORMAT:
            raise CheckpointError(f"checkpoint directory {self.path} was written by another "
                                  "version of shmstress: use another directory")
        if theirs.get("options") != mine["options"]:
            there = theirs.get("options") or {}
            changed = [f"{_FLAGS.get(name, name)} {there.get(name)!r} there, {value!r} here"
                       for name, value in mine["options"].items() if there.get(name) != value]
            raise CheckpointError(f"checkpoint directory {self.path} belongs to another "
                                  f"command ({'; '.join(changed)}): rerun that command, or "
                                  "use another directory")
        if theirs.get("code") != mine["code"]:
            log(f"checkpoint directory {self.path} was written by shmstress "
                f"{theirs.get('code')}, this is {mine['code']}: its trials resume, but may take "
                "other executions than an uninterrupted run would (delete it to start over)")

    @staticmethod
    def _name(task: Task) -> str:
        return f"{task.program}.{task.strategy}.seed{task.seed}"

    def checkpoint_of(self, task: Task) -> Path:
        return self.path / f"{self._name(task)}.ckpt"

    def result_of(self, task: Task) -> Path:
        return self.path / f"{self._name(task)}.json"

    def keep(self, task: Task, result: object) -> None:
        """The trial's result, whole; then its checkpoint goes."""
        data = {"format": FORMAT, "task": _task(task), "kind": type(result).__name__,
                "result": asdict(result)}  # type: ignore[call-overload]
        write_text_atomically(self.result_of(task), json.dumps(data, indent=2) + "\n",
                              "a trial's result")
        self.checkpoint_of(task).unlink(missing_ok=True)

    def kept(self, task: Task) -> tuple[str, dict[str, Any]] | None:
        """The result of a trial that finished in an earlier run: the name of its class
        and its fields; None if it did not finish."""
        path = self.result_of(task)
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise CheckpointError(f"trial result {path} cannot be read ({exc}): delete it "
                                  "to run the trial again") from exc
        if (not isinstance(data, dict) or data.get("format") != FORMAT
                or data.get("task") != _task(task) or not isinstance(data.get("result"), dict)
                or data.get("kind") not in KINDS):
            raise CheckpointError(f"trial result {path} is not this trial's: delete it to "
                                  "run the trial again")
        return data["kind"], data["result"]


def _task(task: Task) -> dict[str, Any]:
    return {"program": task.program, "strategy": task.strategy, "seed": task.seed,
            "budget": task.budget}
