"""Helpers for tests of trackers: explore interleavings, sequential runs, stress verdicts;
and ``declare_lock``, to tell plain-code runs about a lock they do not know."""

from shmstress.testing.locks import declare_lock

__all__ = ["declare_lock"]
