"""What a plain-code session is asked to run: the scenario and the bounds of its board.

Plain data, apart from the engine (``plain.session``): the command line builds its
options, defaults and ``--help`` from it without importing the engine.
"""

from __future__ import annotations

from dataclasses import dataclass

from shmstress.core.errors import ConfigError
from shmstress.plain.scenario import ScenarioRef, traced_code

MAILBOX_BYTES = 4 << 20  # the default room for queue and pipe messages in flight, pickled


@dataclass(frozen=True)
class FreeSpec:
    """Free mode: the processes run on their own, one step at a time, in the order the OS
    gives them the step lock, perturbed by noise at each point."""

    noise: float = 0.1  # probability of a yield or a short sleep at a point
    max_sleep_us: float = 100.0

    def validate(self) -> None:
        if not 0.0 <= self.noise <= 1.0:
            raise ConfigError(f"--noise must be a probability in [0, 1], got {self.noise}")
        if not 0.0 <= self.max_sleep_us <= 1e6:
            raise ConfigError("--max-sleep-us must be between 0 and 1,000,000, got "
                              f"{self.max_sleep_us}")


@dataclass(frozen=True)
class PlainSpec:
    """A plain-code session: the scenario and the bounds of its board."""

    scenario: ScenarioRef
    max_processes: int = 16  # main included
    max_steps: int = 20_000
    max_objects: int = 256
    mailbox_mib: int = MAILBOX_BYTES >> 20  # room for queue and pipe messages in flight
    trace: tuple[str, ...] = ()  # --trace: code whose shared-memory accesses are points
    self_check: bool = True  # plain.selfcheck: notice what is outside control
    free: FreeSpec | None = None  # None: controlled mode
    pin: bool = True  # controlled mode: every process on one CPU (handoffs are cheaper)
    stop_timeout: float = 10.0  # for a process to reach its next point
    load_timeout: float = 60.0  # for the scenario's module to import

    def validate(self) -> None:
        """Refuse bounds no session can run under, in the command line's words: the same
        check for ``shmstress test`` and for the Python API, which took ``max_steps=0`` and
        cut every execution at its first step."""
        for flag, value, least in (("--max-steps", self.max_steps, 1),
                                   ("--max-processes", self.max_processes - 1, 1),
                                   ("--mailbox-mib", self.mailbox_mib, 1)):
            if value < least:
                raise ConfigError(f"{flag} must be at least {least}, got {value}")
        if not self.stop_timeout > 0:
            raise ConfigError(f"--stop-timeout must be above 0, got {self.stop_timeout}")
        if self.free is not None:
            self.free.validate()


@dataclass(frozen=True)
class SessionOptions:
    """What a ``@concurrency_test`` says of its session (``testing.plain``), which a
    campaign's trial of it honours too (``campaign.scenarios``): what is traced besides the
    test's project, the bounds, and whether code outside control is accepted."""

    trace: tuple[str, ...] = ()
    auto_trace: bool = True
    max_steps: int = PlainSpec.max_steps
    max_processes: int = PlainSpec.max_processes - 1  # the scenario's; its main is one more
    accept_uncontrolled: bool = False

    def spec(self, ref: ScenarioRef, free: FreeSpec | None = None) -> PlainSpec:
        """The session ``ref`` runs in."""
        return PlainSpec(ref, max_processes=self.max_processes + 1, max_steps=self.max_steps,
                         trace=traced_code(ref, self.trace, self.auto_trace), free=free)
