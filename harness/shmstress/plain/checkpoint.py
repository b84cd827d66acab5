"""A long plain-code exploration saved at an execution boundary, and resumed exactly.

100,000 executions of a program that starts 27 processes each cost hours of CPU: more
than a working session, and more than a preemptible machine may keep running. So an
exploration can save everything its next executions depend on, and a later process
picks it up at the execution where it stopped:

- how far it got (``Tally``: executions, their ends, steps, coverage counts, elapsed time);
- the strategy, whole (a portfolio with every member's RNG and what it learnt: PCT's
  execution length, DPOR's tree of untried choices), and free mode's seed RNG;
- the session's object ids (``footprints.Names``): DPOR compares the footprints of new
  executions with the ones it kept, by those ids, so a new session must give each
  object the id it had.

Everything is pickled. A resumed exploration then takes exactly the executions an
uninterrupted one would, as long as the scenario and shmstress are the same code: the
same seed takes the same steps in every session. A checkpoint is saved only between
two executions, never in the middle of one (a strategy is changed by every step it
decides), so a signal lets the current execution finish (it is bounded by
``--max-steps`` and the session's timeouts) and the exploration saves, then stops.

A checkpoint names what it belongs to (``Identity``: scenario, bounds, strategy, seed,
budget) and carries a format version; one that does not match the command is refused
in one line, before anything runs. It also keeps the digests of the code under test's
files (``plain.sources``): one saved with other code is refused once the host has
imported the scenario, before the first execution. The file is written to a temporary
name and renamed: a kill while saving leaves the previous checkpoint.

The file is two pickles, the header (version, identity, executions done) and the state,
so that a caller can check a directory of them without loading every search. Loading a
pickle can run code, so only a regular file of this user, not a symlink, is read.
"""

from __future__ import annotations

import errno
import os
import pickle
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from shmstress.controlled.coverage import CoverageCount
from shmstress.controlled.strategies.base import Strategy, StrategySpec
from shmstress.core.errors import ConfigError
from shmstress.core.files import replaced_atomically
from shmstress.core.shm import open_ours
from shmstress.plain.footprints import Names
from shmstress.plain.outcome import PlainOutcome
from shmstress.plain.sources import Sources
from shmstress.plain.spec import PlainSpec

FORMAT = 5  # 3: DPOR keeps its untried choices by execution (dpor._Kept); 4: the tally
# keeps what the self-check saw and the steps by kind; 5: each strategy's spec is its own class
"""The version of the file's layout and of what its state holds."""

SAVE_EVERY_S = 60.0
"""Seconds between two saves of a running exploration: what a kill without a signal
(SIGKILL, a machine lost) costs at most; saving a big search takes milliseconds."""


class CheckpointError(ConfigError):
    """A checkpoint cannot be used for this command (another exploration, another format,
    unreadable) or cannot be written: one line, exit 2, nothing runs."""


@dataclass(frozen=True)
class Identity:
    """What an exploration is: a checkpoint of another one is refused."""

    scenario: str
    max_processes: int
    max_steps: int
    max_objects: int
    trace: tuple[str, ...]
    free: str  # free mode's noise, "" in controlled mode
    strategy: str
    seed: int
    executions: int  # the budget

    @classmethod
    def of(cls, spec: PlainSpec, strategy: StrategySpec, seed: int,
           executions: int) -> Identity:
        free = "" if spec.free is None else (f"noise {spec.free.noise:g}, max sleep "
                                             f"{spec.free.max_sleep_us:g} us")
        return cls(spec.scenario.describe(), spec.max_processes, spec.max_steps,
                   spec.max_objects, spec.trace, free, strategy.describe(), seed, executions)

    def differences(self, other: Identity) -> list[str]:
        """``field: theirs here, ours there``, for each field that differs."""
        mine, theirs = asdict(self), asdict(other)
        return [f"{name} {theirs[name]!r} in the checkpoint, {mine[name]!r} here"
                for name in mine if mine[name] != theirs[name]]


@dataclass(frozen=True)
class Header:
    """The file's first pickle: enough to check it and to say how far it got."""

    format: int
    identity: Identity
    executions: int


@dataclass
class Tally:
    """What the executions so far came to."""

    executions: int = 0
    ends: dict[str, int] = field(default_factory=dict)
    steps: int = 0
    elapsed_s: float = 0.0  # over every session of the exploration
    coverage: CoverageCount = field(default_factory=CoverageCount)
    uncontrolled: dict[str, int] = field(default_factory=dict)  # self-check line -> executions
    kinds: dict[str, int] = field(default_factory=dict)  # steps by their verb ("read": 1,200)


@dataclass
class Ending:
    """How a finished exploration ended: a checkpoint saved after its last execution
    answers a rerun without running anything."""

    exhausted: bool
    failing: PlainOutcome | None
    found_by: StrategySpec | None


@dataclass
class Saved:
    """Everything the next execution depends on."""

    tally: Tally
    strategy: Strategy | None  # None in free mode
    seeds: random.Random  # free mode's execution seeds
    names: Names
    ending: Ending | None = None  # set once the exploration ended
    sources: Sources | None = None  # the code under test it searched (``plain.sources``)
    shmstress: str = ""  # the shmstress that saved it (``provenance.shmstress_code``)


Log = Callable[[str], None]


def _quiet(line: str) -> None:
    """The default log: nothing."""


@dataclass(frozen=True)
class Checkpointing:
    """Where an exploration saves itself, and how often: every ``seconds``, and every
    ``every`` executions if that is not 0, at the next execution boundary; always when a
    signal stops it and when it ends."""

    path: Path
    seconds: float = SAVE_EVERY_S
    every: int = 0
    log: Log = _quiet  # says it resumed, and from which execution

    def read_header(self) -> Header | None:
        """The file's format, identity and executions done; None if there is no checkpoint
        yet."""
        read = self._read(1)
        if read is None:
            return None
        header = read[0]
        if not isinstance(header, Header):
            raise CheckpointError(f"checkpoint {self.path} is not a shmstress checkpoint: "
                                  "delete it to start over")
        return header

    def check(self, identity: Identity) -> bool:
        """Whether a checkpoint of this exploration is there; ``CheckpointError`` if one
        of another exploration or format is."""
        header = self.read_header()
        if header is None:
            return False
        version, theirs = header.format, header.identity
        if version != FORMAT:
            raise CheckpointError(f"checkpoint {self.path} has format {version}, this "
                                  f"shmstress reads {FORMAT}: delete it to start over")
        if theirs != identity:
            raise CheckpointError(
                f"checkpoint {self.path} belongs to another exploration ("
                + "; ".join(identity.differences(theirs))
                + "): run the command that made it, or delete it to start over")
        return True

    def load(self, identity: Identity) -> Saved | None:
        """The saved state of this exploration, or None if there is none yet."""
        if not self.check(identity):
            return None
        read = self._read(2)  # the header, checked, and the state
        saved = read[1] if read is not None else None
        if not isinstance(saved, Saved):
            raise CheckpointError(f"checkpoint {self.path} holds no exploration: delete it "
                                  "to start over")
        return saved

    def _read(self, pickles: int) -> list[object] | None:
        """The file's first ``pickles`` pickles; None if there is no file."""
        try:
            opened = open_ours(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ELOOP):  # not ours, or a symlink
                raise CheckpointError(f"checkpoint {self.path} cannot be read ({exc})") from exc
            raise CheckpointError(f"checkpoint {self.path} is not a regular file of uid "
                                  f"{os.geteuid()}, so it is not read (a checkpoint is a "
                                  "pickle, and loading one can run code)") from exc
        try:
            with open(opened, "rb") as stream:
                return [pickle.load(stream) for _ in range(pickles)]
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError,
                TypeError, ValueError) as exc:
            raise CheckpointError(f"checkpoint {self.path} cannot be read ({exc}): delete it "
                                  "to start over") from exc

    def save(self, identity: Identity, saved: Saved) -> None:
        """Write the checkpoint whole (temporary file, renamed), or raise in one line."""
        try:
            state = pickle.dumps(saved, pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            what = type(saved.strategy).__name__ if saved.strategy is not None else "state"
            raise CheckpointError(f"the exploration cannot be checkpointed: its {what} does "
                                  f"not pickle ({exc})") from exc
        with replaced_atomically(self.path, "the checkpoint") as stream:
            pickle.dump(Header(FORMAT, identity, saved.tally.executions), stream.buffer,
                        pickle.HIGHEST_PROTOCOL)
            stream.buffer.write(state)

    def discard(self) -> None:
        """Remove the checkpoint (its exploration's result is kept elsewhere)."""
        self.path.unlink(missing_ok=True)


SAVING_SHARE = 0.05
"""At most this share of the time goes to saving: a search whose state takes long to pickle
(DPOR's grows by about a kilobyte an execution) is saved less often than every minute."""


class Saver:
    """Saves a running exploration when it is due: by time or count, at a boundary."""

    def __init__(self, checkpointing: Checkpointing, identity: Identity,
                 executions: int) -> None:
        self._checkpointing = checkpointing
        self._identity = identity
        self._last_s = time.monotonic()
        self._last = executions
        self._interval_s = checkpointing.seconds

    def due(self, executions: int) -> bool:
        every = self._checkpointing.every
        return ((every > 0 and executions - self._last >= every)
                or time.monotonic() - self._last_s >= self._interval_s)

    def save(self, saved: Saved) -> None:
        started = time.monotonic()
        self._checkpointing.save(self._identity, saved)
        self._last_s = time.monotonic()
        self._last = saved.tally.executions
        self._interval_s = max(self._checkpointing.seconds,
                               (self._last_s - started) / SAVING_SHARE)
