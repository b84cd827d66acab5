"""How a tracker's recorded points read in logs and explanations: the optional plugin hook.

Records hold only ints and interned strings; what ``claim=553`` means, which
points matter at which verbosity, and how a step reads in an explanation
("copies allocated devices") only the tracker knows. A tracker that wants
readable logs overrides the classmethod ``words(params) -> Words``
(returning a subclass of ``Words``); one that does not gets these defaults,
which render every point as its label with its fields as recorded.

The explanation is built by the harness (``shmstress.analysis``) from the
recorded steps; the tracker contributes only words and two small facts
about its own model: which objects a step names (``subjects``) and what a
step makes true (``effects``). What a violation is about is its invariant's
``scope``. A fact
listed in ``holdings`` is one a worker holds until it finishes a step (an
event popped and not yet delivered): the harness names that worker, and
reaches back to where it began holding, when a failure's objects are held.

``kinds`` and ``related`` serve ``shmstress log``: which object a field names
when its key is not the object's kind (``previous`` names a device), and which
objects belong to another and are found named alongside it (a claim's pod).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from shmstress.core.access import Access

Subject = tuple[str, int]
"""An object of the tracker's model as (kind, id): ``("claim", 553)``."""

Fields = tuple[tuple[str, object], ...]

MAX_VERBOSITY = 9
"""The most verbose level (``--log-level 9``): every point and log call."""


@dataclass(frozen=True)
class Effect:
    """A step made ``fact`` hold (or not) for ``subject``; folded to state the initial state."""

    subject: Subject
    fact: str
    holds: bool


@dataclass(frozen=True)
class Scope:
    """What a violation is about: its objects, the worker that saw it, where its operation began.

    ``start`` is the sequence number of the first point of the operation that
    went wrong (a gather's start); None lets the harness pick a window itself.
    """

    subjects: tuple[Subject, ...]
    worker: int | None = None
    start: int | None = None
    names: Mapping[Subject, str] = field(default_factory=dict)


class Words:
    """Defaults for a tracker without words of its own; override any method."""

    logger: str = "shmstress"
    facts: tuple[str, ...] = ()
    """Facts ``effects`` can set, in the order the initial state lists them."""
    holdings: tuple[str, ...] = ()
    """Facts held by the worker that set them, worded to sit between the worker and the
    object: "reader #1 (pid 7) <holds the popped event of> item 3"."""
    kinds: ClassVar[Mapping[str, str]] = {}
    """Field key -> kind of the object it names, where the two differ."""
    related: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    """Kind -> kinds of the objects that belong to one of it (named alongside it in a line)."""

    verbosities: ClassVar[Mapping[str, int]] = {}
    """Label -> klog-style V level (0 always shown, higher is chattier)."""
    default_verbosity: ClassVar[int] = 0
    """The V level of a label not in ``verbosities`` (e.g. the plumbing of a role's loop)."""

    def event(self, label: str, fields: Fields) -> tuple[str, Fields]:
        """The klog message and rendered fields of a record: each int field through its
        ``field_namer``, the rest as recorded. Override for messages that combine fields."""
        shown: list[tuple[str, object]] = []
        for key, value in fields:
            namer = self.field_namer(key)
            if namer is not None and isinstance(value, int) and not isinstance(value, bool):
                shown.append((key, namer(value)))
            else:
                shown.append((key, value))
        return label, tuple(shown)

    def field_namer(self, key: str) -> Callable[[int], object] | None:
        """How an int field called ``key`` reads in the log (``claim`` -> "ns/claim-0553");
        None: as recorded."""
        return None

    def verbosity(self, label: str) -> int:
        """klog-style V level of a point or log message: 0 always shown, higher is chattier."""
        return self.verbosities.get(label, self.default_verbosity)

    def step(self, label: str, fields: Mapping[str, object]) -> str | None:
        """How this step reads in an explanation; None: not worth a word."""
        return label

    def subjects(self, label: str, fields: Mapping[str, object]) -> tuple[Subject, ...]:
        """Objects a record names; by default every integer field is one."""
        return tuple(
            (key, value) for key, value in fields.items()
            if isinstance(value, int) and not isinstance(value, bool)
        )

    def effects(self, label: str, fields: Mapping[str, object]) -> tuple[Effect, ...]:
        return ()

    def accesses(self, label: str, fields: Mapping[str, object]) -> tuple[Access, ...] | None:
        """What the step after this point reads and writes (``core.access``); None: not
        declared, so it may conflict with any step (searches stay sound, explanations
        cannot tell its reads from its writes). Lock points need nothing here: the
        harness knows which instrumented lock a point acquires."""
        return None

    def initial_facts(self, subject: Subject) -> Mapping[str, bool]:
        """Facts of ``subject`` when the run starts (after a ring wrapped, those a lost record
        may have changed are reported in doubt: ``analysis.facts``)."""
        return {}

    def name(self, subject: Subject) -> str:
        return f"{subject[0]} {subject[1]}"

    def parameters_for(self, objects: Mapping[str, int]) -> Mapping[str, int]:
        """The parameters of a scenario with room for ``objects`` (kind -> how many distinct
        ones a log names: ``shmstress import-log`` sizes its search so); by default the
        tracker's defaults."""
        return {}

    def labels(self) -> frozenset[str]:
        """The point and log labels these words know (``shmstress check`` warns about any
        that no probe reached: a label misspelt here or renamed in the tracker)."""
        return frozenset(self.verbosities)


@dataclass(frozen=True)
class Raw:
    """A field value that is already rendered and must appear as is in a klog line.

    Some values read best in a notation of their own, like ``<types.UID>: a84d...``
    in the reference log or a JSON list of names; quoting them would hide that they
    are not plain strings. Raw text with a line break is shown as a multi-line value,
    because a bare line break would end the event.
    """

    text: str
