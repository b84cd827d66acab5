"""Everything a test of concurrent code needs, in one module.

    from shmstress.testing import ConcurrencyFailure, PctSpec, check, concurrency_test

- ``concurrency_test``: a decorator; the test passes when every controlled execution of
  it does (``testing.plain``).
- ``check``: the same from inside a test, for a function or a tracker (``testing.checking``).
- ``replay``: a bundle replayed step for step; it raises while the failure comes back,
  else returns its ``Verdict`` (the fix holds, or the schedule no longer applies).
- ``ConcurrencyFailure``: what all of them raise, and ``linearizable`` too (its
  ``LincheckFailure`` is one): one type to catch. (The fixture fails a test as pytest's
  fixtures do, with ``pytest.fail``.)
- ``StressRun`` and ``RunResult``: the ``shmstress_run`` fixture's type and what it returns.
- ``PctSpec``, ``RandomWalkSpec``, ``ExhaustiveSpec``, ``DporSpec``, ``PortfolioSpec``: a
  strategy with its parameters, for ``strategy=``.
- ``declare_lock``: tell plain-code runs about a lock they do not know.
- ``linearizable``, ``check_linearizable`` and ``operation``: Hypothesis-drawn concurrent
  tests of an object with a linearizability verdict (``testing.lincheck``).

Every name but ``declare_lock`` and ``ConcurrencyFailure`` is imported when first used:
each execution's host imports this package (a scenario's module may call
``declare_lock``), and needs neither the search, nor Hypothesis, nor the plugin.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from shmstress.core.errors import ConcurrencyFailure
from shmstress.testing.locks import declare_lock

if TYPE_CHECKING:
    from shmstress.controlled.strategies import (
        DporSpec,
        ExhaustiveSpec,
        PctSpec,
        PortfolioSpec,
        RandomWalkSpec,
    )
    from shmstress.core.result import RunResult
    from shmstress.repro.replay import Verdict
    from shmstress.testing.checking import check
    from shmstress.testing.fixture import StressRun
    from shmstress.testing.lincheck.check import check_linearizable, linearizable
    from shmstress.testing.lincheck.declaration import operation
    from shmstress.testing.plain import concurrency_test
    from shmstress.testing.replaying import replay

_STRATEGIES = "shmstress.controlled.strategies"
_LAZY = {
    "check": "shmstress.testing.checking",
    "concurrency_test": "shmstress.testing.plain",
    "replay": "shmstress.testing.replaying",
    "Verdict": "shmstress.repro.replay",
    "StressRun": "shmstress.testing.fixture",
    "RunResult": "shmstress.core.result",
    "linearizable": "shmstress.testing.lincheck.check",
    "check_linearizable": "shmstress.testing.lincheck.check",
    "operation": "shmstress.testing.lincheck.declaration",
    "PctSpec": _STRATEGIES,
    "RandomWalkSpec": _STRATEGIES,
    "ExhaustiveSpec": _STRATEGIES,
    "DporSpec": _STRATEGIES,
    "PortfolioSpec": _STRATEGIES,
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'shmstress.testing' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "ConcurrencyFailure",
    "DporSpec",
    "ExhaustiveSpec",
    "PctSpec",
    "PortfolioSpec",
    "RandomWalkSpec",
    "RunResult",
    "StressRun",
    "Verdict",
    "check",
    "check_linearizable",
    "concurrency_test",
    "declare_lock",
    "linearizable",
    "operation",
    "replay",
]
