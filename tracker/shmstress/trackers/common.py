"""Small helpers the built-in trackers share, built on the plugin API alone."""

from __future__ import annotations

import numpy as np

from shmstress.api import NO_ID, SharedArray


class ApiConflict(Exception):  # noqa: N818 - named after the HTTP status
    """An optimistic-concurrency update found its object changed since it was read: the
    caller re-reads and retries (a Kubernetes API server's 409, as trackers model it)."""


def age_one(candidates: np.ndarray, age: SharedArray, pick: int, hold: int) -> int:
    """Age one of ``candidates`` (indices, chosen by ``pick``) by a step; return it once its age
    reached ``hold``, else NO_ID. The caller holds the lock that guards ``age``.

    Holds count steps, not seconds, so a seed (and a replay) makes the same decisions.
    """
    if candidates.size == 0:
        return NO_ID
    chosen = int(candidates[pick % candidates.size])
    aged = age.mv[chosen] + 1
    age.mv[chosen] = aged
    return chosen if aged >= hold else NO_ID


def bits(mask: int) -> list[int]:
    """The indices set in a bitmask, lowest first: trackers keep small sets (a group's devices,
    a claim's ReservedFor) as one int64 field so a record or violation carries them whole."""
    return [bit for bit in range(mask.bit_length()) if mask >> bit & 1]


SMALL_ARRAY = 64
"""Up to this many values, the helpers below scan in Python: numpy spends microseconds per
call on dispatch (a tiny compare plus ``flatnonzero`` costs several times a Python scan of
the memoryview), and a role's step calls them at nearly every point. Longer arrays go
through numpy, whose per-value cost is far lower."""


def where_equal(array: SharedArray, value: int) -> list[int]:
    """The indices of ``array`` that hold ``value``, lowest first."""
    values = array.mv
    if len(values) <= SMALL_ARRAY:
        if value not in values:  # the common case of a role that polls: one scan in C
            return []
        return [index for index, held in enumerate(values) if held == value]
    found: list[int] = np.flatnonzero(array.np == value).tolist()
    return found


def where_at_least(array: SharedArray, value: int) -> list[int]:
    """The indices of ``array`` that hold ``value`` or more, lowest first."""
    values = array.mv
    if len(values) <= SMALL_ARRAY:
        return [index for index, held in enumerate(values) if held >= value]
    found: list[int] = np.flatnonzero(array.np >= value).tolist()
    return found


def mask_equal(array: SharedArray, value: int) -> list[bool]:
    """Per index of ``array``: does it hold ``value``?"""
    values = array.mv
    if len(values) <= SMALL_ARRAY:
        return [held == value for held in values]
    mask: list[bool] = (array.np == value).tolist()
    return mask


def mask_at_least(array: SharedArray, value: int) -> list[bool]:
    """Per index of ``array``: does it hold ``value`` or more?"""
    values = array.mv
    if len(values) <= SMALL_ARRAY:
        return [held >= value for held in values]
    mask: list[bool] = (array.np >= value).tolist()
    return mask
