"""PreBind's check-then-act, made atomic or not, and two mutations of the plugin's code."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Traits:
    """How PreBind claims devices, and which injected bug (if any) the plugin carries."""

    atomic_prebind: bool
    padded_release: bool = False  # the release list starts with 4 zeros (make([]int, 4, n))
    unreserve_returns_early: bool = False  # an inverted error check skips the whole Unreserve


VARIANTS: dict[str, tuple[Traits, str]] = {
    "select-then-allocate": (
        Traits(atomic_prebind=False),
        "PreBind checks the group, selects free devices, allocates them and binds the group "
        "in separate critical sections: concurrent PreBinds pick the same devices (racy)",
    ),
    "atomic": (
        Traits(atomic_prebind=True),
        "check, select, allocate and bind in one critical section of the device tracker "
        "(correct)",
    ),
    "mutant-padded-release": (
        Traits(atomic_prebind=True, padded_release=True),
        "mutation: the list of devices to release starts with four zeros, so device 0 is "
        "released again and again (buggy)",
    ),
    "mutant-unreserve-returns-early": (
        Traits(atomic_prebind=True, unreserve_returns_early=True),
        "mutation: an inverted error check makes Unreserve return before releasing anything, "
        "so a failed binding leaks its group's devices (buggy)",
    ),
}

RACY = ("select-then-allocate",)
CORRECT = ("atomic",)
MUTANTS = ("mutant-padded-release", "mutant-unreserve-returns-early")
