"""Blocks: a schedule as runs of one worker's steps, ``(worker, steps)``, in order.

Shrinking uses it to take context switches out of a schedule. Deviations
(``guided``) are indexed by step, so dropping one shifts every later step
and the rest no longer land where they should; blocks count each worker's
own steps, so dropping a block (a spinner looking once more while another
worker is busy) leaves every other block about the same operations. A block
whose worker cannot run (blocked, finished) is skipped; once the blocks are
used up the schedule without preemptions (``default_choice``) goes on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from shmstress.controlled.strategies.base import (
    OneExecution,
    SchedulerView,
    StrategySpec,
    default_choice,
)
from shmstress.core.trace import Step

Block = tuple[int, int]  # (worker, steps)


def blocks_of(steps: Sequence[Step]) -> tuple[Block, ...]:
    """The run-length encoding of a schedule by worker."""
    out: list[list[int]] = []
    for step in steps:
        if out and out[-1][0] == step.worker:
            out[-1][1] += 1
        else:
            out.append([step.worker, 1])
    return tuple((worker, count) for worker, count in out)


def without_block(blocks: Sequence[Block], index: int) -> tuple[Block, ...]:
    """``blocks`` with the one at ``index`` dropped, its neighbours merged if one worker's."""
    rest = [*blocks[:index], *blocks[index + 1:]]
    if 0 < index < len(rest) and rest[index - 1][0] == rest[index][0]:
        worker = rest[index][0]
        rest[index - 1: index + 1] = [(worker, rest[index - 1][1] + rest[index][1])]
    return tuple(rest)


@dataclass(frozen=True)
class BlocksSpec(StrategySpec):
    """A schedule of blocks of steps, as a shrink moves them."""

    name = "blocks"


class Blocks(OneExecution):
    def __init__(self, blocks: Sequence[Block], execution_seed: int) -> None:
        self._blocks = tuple(blocks)
        self._seed = execution_seed
        self._index = 0
        self._left = self._blocks[0][1] if self._blocks else 0
        self.spec = BlocksSpec()

    def next_task(self, view: SchedulerView) -> tuple[int, int]:
        blocks = self._blocks
        while self._index < len(blocks):
            worker = blocks[self._index][0]
            if self._left > 0 and worker in view.runnable:
                self._left -= 1
                return worker, 1
            self._index += 1
            self._left = blocks[self._index][1] if self._index < len(blocks) else 0
        return default_choice(view), 1

    def next_u64(self) -> int:
        return self._seed
