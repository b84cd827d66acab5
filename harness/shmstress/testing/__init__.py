"""Helpers for tests of trackers: explore interleavings, sequential runs, stress verdicts;
``declare_lock``, to tell plain-code runs about a lock they do not know; and
``linearizable`` with ``operation``, Hypothesis-drawn concurrent tests of an object
(``testing.lincheck``), imported when first named: every execution's host imports this
package, and needs neither Hypothesis nor the search."""

from typing import Any

from shmstress.testing.locks import declare_lock

_LINCHECK = {"linearizable": "shmstress.testing.lincheck.check",
             "check_linearizable": "shmstress.testing.lincheck.check",
             "operation": "shmstress.testing.lincheck.declaration"}


def __getattr__(name: str) -> Any:
    module = _LINCHECK.get(name)
    if module is None:
        raise AttributeError(f"module 'shmstress.testing' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = ["check_linearizable", "declare_lock", "linearizable", "operation"]
