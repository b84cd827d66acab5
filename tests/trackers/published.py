"""A ready flag published before the rows it guards (loaded by path).

A writer fills a table's rows and sets its ready flag; a reader waits for the
flag, then reads the rows. ``flag-first`` publishes the flag before it writes
the rows, so a reader can see the flag and find the rows empty: ``rows-ready``
breaks at the reader, whose last steps show only the symptom (it read the flag,
then empty rows); the step that made it possible is the writer's publish,
which the explanation finds from what the points declare they read and write.
``rows-first`` writes the rows first and never breaks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from shmstress.api import (
    Access,
    Invariant,
    Parameter,
    Phase,
    RoleSpec,
    Setup,
    Tracker,
    Words,
    Workers,
)

_ACCESSES = {
    "publish": (Access("flag", 0, True),),
    "write rows": (Access("rows", 0, True),),
    "read flag": (Access("flag", 0, False),),
    "read rows": (Access("rows", 0, False),),
}


class _RowsReady(Invariant):
    name = "rows-ready"
    summary = "a reader that saw the ready flag finds the rows written"
    fields = ("table",)

    def render(self, fields: Mapping[str, int], workers: Workers,
               params: Mapping[str, int]) -> str:
        return f"table {fields['table']} was ready but its rows were empty"


class _Declared(Words):
    def accesses(self, label: str, fields: Mapping[str, object]) -> tuple[Access, ...] | None:
        return _ACCESSES.get(label)


class _Writer:
    def __init__(self, tracker: Published, index: int) -> None:
        self.t = tracker

    def step(self, phase: Phase) -> bool:
        t = self.t
        if t.table.mv[0]:  # published: done
            return False
        order = ("publish", "write rows") if t.flag_first else ("write rows", "publish")
        for label in order:
            t.runtime.point(label, table=0)
            t.table.mv[0 if label == "publish" else 1] = 1
        return False


class _Reader:
    def __init__(self, tracker: Published, index: int) -> None:
        self.t = tracker

    def step(self, phase: Phase) -> bool:
        t = self.t
        t.runtime.point("read flag", table=0)
        if not t.table.mv[0]:
            return t.runtime.idle()
        t.runtime.point("read rows", table=0)
        if not t.table.mv[1]:
            t.runtime.violation("rows-ready", table=0)
        return False


class Published(Tracker):
    name: ClassVar[str] = "published"
    summary: ClassVar[str] = "a ready flag and the rows it guards"
    variants: ClassVar[Mapping[str, str]] = {
        "flag-first": "publishes the flag, then writes the rows (racy)",
        "rows-first": "writes the rows, then publishes the flag (correct)",
    }
    parameters: ClassVar[Mapping[str, Parameter]] = {}
    invariants = (_RowsReady(),)
    roles: ClassVar[Mapping[str, RoleSpec]] = {
        "writer": RoleSpec(_Writer, "fills the table and publishes it", count=1),
        "reader": RoleSpec(_Reader, "waits for the flag, then reads the rows", count=1),
    }

    def __init__(self, setup: Setup, variant: str, params: Mapping[str, int]) -> None:
        self.runtime = setup.runtime
        self.table = setup.array("published.table", 2)  # [ready flag, rows written]
        self.flag_first = variant == "flag-first"

    @classmethod
    def words(cls, params: Mapping[str, int]) -> Words:
        return _Declared()
