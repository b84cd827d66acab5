"""``--shard I/N``: one job of a CI matrix runs its deterministic share of a list of trials.

The list is computed whole in every job, exactly as an unsharded run computes it (with
every trial's seed), and each job keeps its block of it: the N jobs together run each
trial once, with the seed the unsharded run gives it, and no job needs to hear from
another.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from shmstress.core.errors import ConfigError

_T = TypeVar("_T")


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (from 1): the ``index``-th of ``count`` contiguous blocks of
    a list of trials, in its order, their sizes differing by one at most.

    Blocks rather than every ``count``-th trial: a campaign's trial-major order cycles
    through the configurations (a suite's, through each program's strategies and seeds),
    so a block of at least one cycle samples every configuration as the whole run does,
    and every shard gets the same mix of slow and fast ones; taking every ``count``-th
    trial would give a shard only the configurations whose position shares its remainder
    (with 16 configurations and 4 shards, one shard would run all the free trials and
    another none).
    """

    index: int = 1
    count: int = 1

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    @property
    def whole(self) -> bool:
        return self.count == 1

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``I/N``, 1 <= I <= N; anything else is one ConfigError line."""
        index, slash, count = text.strip().partition("/")
        if slash and index.isdigit() and count.isdigit():
            shard = cls(int(index), int(count))
            if shard.valid:
                return shard
        raise ConfigError(f"--shard must be I/N with 1 <= I <= N (shard I of N), got {text!r}")

    @property
    def valid(self) -> bool:
        return 1 <= self.index <= self.count

    def select(self, trials: Sequence[_T]) -> list[_T]:
        """This shard's block of ``trials``: the N blocks, in order, are the whole list."""
        total = len(trials)
        start = (self.index - 1) * total // self.count
        return list(trials[start:self.index * total // self.count])


WHOLE = Shard()
"""The whole list: a run that is not sharded."""
