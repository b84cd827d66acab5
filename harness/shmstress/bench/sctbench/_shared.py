"""Types for the ports' shared memory: what a C global becomes in a forked process.

``multiprocessing.Value(..., lock=False)`` and ``Array(..., lock=False)`` are typed
``Any`` by typeshed; the ports annotate them with these protocols so that mypy
checks every access (``.value`` of an ``int`` global, ``[i]`` of an array).
The locks and condition variables keep the types of ``multiprocessing.synchronize``.
"""

from __future__ import annotations

from typing import Protocol


class Cell(Protocol):
    """A C ``int`` (or ``_Bool``, ``unsigned``) global: one ``.value`` read or write a step."""

    value: int


class Cells(Protocol):
    """A C array of integers: each element read or written is a step."""

    def __getitem__(self, index: int, /) -> int: ...

    def __setitem__(self, index: int, value: int, /) -> None: ...

    def __len__(self) -> int: ...
