"""Whether aimed delays pay at all in this run: an A/B test over short epochs of time.

A location's own counts (``shmstress.free.aim``) say whether delays there are
followed by violations more often than passes are, but a violation is credited
to every location passed just before it, and where nearly every pass is delayed
the passes are too few to compare with. The run as a whole has a plainer signal:
its violations per second with delays on and with them off. So time is cut into
epochs (``AimParams.epoch_ms``); from the run's first violation on, most have
delays on and one in ``control`` has them off, and each epoch's violations are
added to its side. Once ``evidence``
violations are in and the off epochs did at least as well per epoch as the on
epochs, the shares swap: delays stay off but for one epoch in ``control`` (which
keeps measuring, so a change of heart is possible). A race inside a library call,
which noise at the points can only slow, then costs little; a race that needs the
delays keeps them nearly all the time.

The epochs follow the system-wide monotonic clock, so every worker agrees on the
current one without talking. The cells are shared and written without a lock by
whichever worker first passes a point in a new epoch; in a free run the gate runs
under the step lock (``Runtime.gate_holds``), so that is one worker at a time.
"""

from __future__ import annotations

from shmstress.core.shm import SharedArray

_LAST, _START_VIOLATIONS, _ON = 0, 1, 2  # the epoch being counted, violations then, its side
_ON_VIOLATIONS, _ON_EPOCHS, _OFF_VIOLATIONS, _OFF_EPOCHS = 3, 4, 5, 6
CELLS = 7


class Epochs:
    """One worker's view of the run's A/B test of delays on against off."""

    def __init__(self, cells: SharedArray, epoch_ms: float, control: int, evidence: int) -> None:
        self._cells = cells.mv
        self._epoch_ns = max(1, int(epoch_ms * 1e6))
        self._control = control
        self._evidence = evidence
        self._epoch = -1
        self._on = True

    def delays_on(self, now_ns: int, violations: int) -> bool:
        """Whether delays are on at ``now_ns``, ``violations`` reported so far in the run."""
        epoch = now_ns // self._epoch_ns
        if epoch == self._epoch:
            return self._on
        self._epoch = epoch
        cells = self._cells
        last = cells[_LAST]
        if epoch > last:  # the first to pass a point in this epoch closes the last one
            if last:
                side = _ON_VIOLATIONS if cells[_ON] else _OFF_VIOLATIONS
                cells[side] += violations - cells[_START_VIOLATIONS]
                cells[side + 1] += epoch - last
            cells[_LAST] = epoch
            cells[_START_VIOLATIONS] = violations
            cells[_ON] = self._side(epoch)
        self._on = bool(cells[_ON])
        return self._on

    def _side(self, epoch: int) -> int:
        """On, but for one epoch in ``control``; the other way round once the evidence says
        the off epochs do at least as well. Before the first violation, always on: off
        epochs could only count zeros, and the run is most often stopped by that first
        violation."""
        cells = self._cells
        on_v, on_n = cells[_ON_VIOLATIONS], cells[_ON_EPOCHS]
        off_v, off_n = cells[_OFF_VIOLATIONS], cells[_OFF_EPOCHS]
        if not on_v + off_v:
            return 1
        useless = (on_v + off_v >= self._evidence and on_n and off_n
                   and off_v * on_n >= on_v * off_n)
        control = epoch % self._control == 0
        return int(control if useless else not control)

    def counts(self) -> tuple[int, int, int, int]:
        """(violations, epochs) with delays on, then off: what the run measured."""
        c = self._cells
        return c[_ON_VIOLATIONS], c[_ON_EPOCHS], c[_OFF_VIOLATIONS], c[_OFF_EPOCHS]
