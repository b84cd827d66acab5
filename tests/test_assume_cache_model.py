"""Hypothesis stateful test: assume cache + allocated devices against a plain-Python model."""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from shmstress.testing.sequential import SequentialRun
from shmstress.trackers.dra.assume_cache import AssumeOutOfSync
from shmstress.trackers.dra.names import NO_ID
from shmstress.trackers.dra.tracker import DraTracker

CLAIMS = 4  # nodes=1, devices-per-node=4
claims = st.integers(0, CLAIMS - 1)
devices = st.integers(-1, CLAIMS - 1)


class AssumeCacheModel(RuleBasedStateMachine):
    """The model: dicts for api/latest objects and a device->claim map fed by the same events."""

    @initialize(variant=st.sampled_from(["fixed", "events-unordered", "single-lock"]))
    def build(self, variant: str) -> None:
        self.run = SequentialRun.build(
            DraTracker, variant, params={"nodes": 1, "devices-per-node": CLAIMS}, record=False
        )
        self.run.runtime.become(0)
        self.cache = self.run.tracker.cache
        self.allocated = self.run.tracker.allocated
        self.api = {c: (NO_ID, c + 1) for c in range(CLAIMS)}
        self.latest = dict(self.api)
        self.held: dict[int, int] = {}
        self.revision = self.allocated.revision()

    def teardown(self) -> None:
        if hasattr(self, "run"):
            self.run.close()

    def _event(self, claim: int, old: int, new: int) -> None:
        if old == new:
            return
        if old != NO_ID:
            self.held.pop(old, None)
        if new != NO_ID:
            self.held[new] = claim
        self.revision += 1

    @rule(claim=claims, device=devices, bump=st.integers(-2, 3))
    def informer_update(self, claim: int, device: int, bump: int) -> None:
        rv = self.latest[claim][1] + bump
        stored = self.cache.update(claim, device, rv)
        assert stored == (rv > self.latest[claim][1])
        if stored:
            self._event(claim, self.latest[claim][0], device)
            self.api[claim] = self.latest[claim] = (device, rv)

    @rule(claim=claims, device=devices, bump=st.integers(-2, 3))
    def assume(self, claim: int, device: int, bump: int) -> None:
        rv = self.latest[claim][1] + bump
        try:
            self.cache.assume(claim, device, rv)
        except AssumeOutOfSync:
            assert rv < self.latest[claim][1]
            return
        assert rv >= self.latest[claim][1]
        self._event(claim, self.latest[claim][0], device)
        self.latest[claim] = (device, rv)

    @precondition(lambda self: hasattr(self, "run"))
    @rule(claim=claims)
    def restore(self, claim: int) -> None:
        self.cache.restore(claim)
        self._event(claim, self.latest[claim][0], self.api[claim][0])
        self.latest[claim] = self.api[claim]

    @invariant()
    def cache_matches_model(self) -> None:
        if not hasattr(self, "run"):
            return
        for claim in range(CLAIMS):
            assert self.cache.get(claim) == self.latest[claim]

    @invariant()
    def allocated_devices_match_model(self) -> None:
        if not hasattr(self, "run"):
            return
        held = {d: int(c) for d, c in enumerate(self.allocated.claim_of.np) if c != NO_ID}
        assert held == self.held
        assert self.allocated.revision() == self.revision


AssumeCacheModel.TestCase.settings = settings(max_examples=60, stateful_step_count=30,
                                             deadline=None)
TestAssumeCacheModel = AssumeCacheModel.TestCase
