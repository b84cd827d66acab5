"""Every error the harness raises on purpose, in one place.

Each error carries one line a user can act on; the CLI prints ``str(error)``
and exits with the code of its class, never a traceback.
"""

from __future__ import annotations

from shmstress.core.exit_reason import ExitCode


class ShmstressError(Exception):
    """Base of every error shmstress raises on purpose."""

    exit_code: ExitCode = ExitCode.USAGE


class ConfigError(ShmstressError):
    """The options of a run cannot work; reported before any process starts."""


class UnknownTrackerError(ConfigError):
    """No tracker of that name is built in, installed, or loadable from that path."""


class UnknownVariantError(ConfigError):
    """The tracker has no variant of that name."""


class PluginError(ConfigError):
    """A user tracker is malformed: a missing role, variant or invariant, or a bad definition."""


class RecordFieldError(PluginError):
    """A point or log call passed a field the recording cannot hold as it is."""


class SegmentError(ShmstressError):
    """A shared-memory segment could not be created, sized or mapped."""


class ArenaFrozenError(SegmentError):
    """Shared state was allocated after the workers were forked, where they could never see it."""


class WorkerCrashedError(ShmstressError):
    """A worker process died or raised instead of finishing its role."""

    exit_code = ExitCode.BROKEN


class RunTimeoutError(ShmstressError):
    """Workers did not stop within the grace period; their stacks were dumped."""

    exit_code = ExitCode.BROKEN


class BundleError(ConfigError):
    """A repro bundle cannot be read: not JSON, not a bundle, or from an incompatible format."""


class ReplayDivergedError(ShmstressError):
    """A replay could not follow its recorded schedule, so it cannot stand for the recording."""

    exit_code = ExitCode.NOT_REPRODUCED


class ScenarioError(ConfigError):
    """A plain-code scenario cannot be loaded: no such file or function, or its import fails."""


class UncontrolledError(ScenarioError):
    """Scenario code reached something shmstress cannot run under its control (named)."""


class PlainLimitError(ConfigError):
    """A scenario started more processes, or made more shared objects, than its board holds."""

    exit_code = ExitCode.LIMIT


class HostLostError(ShmstressError):
    """The process that runs a scenario's executions died or stopped answering."""

    exit_code = ExitCode.BROKEN


class TrialError(ShmstressError):
    """A benchmark trial raised in its pool process: the text of its exception and traceback."""

    exit_code = ExitCode.BROKEN


class LincheckSearchError(ShmstressError):
    """Hypothesis stopped a lincheck search without a verdict (a flaky example, a health check)."""

    exit_code = ExitCode.BROKEN


class LinearizabilityBudgetError(ShmstressError):
    """A linearizability search explored its bound of states without reaching a verdict."""

    exit_code = ExitCode.BROKEN


class ConcurrencyFailure(AssertionError):  # noqa: N818 - a test outcome, not a harness error
    """A concurrent test failed: its message has the interleaving and how to replay it."""
