"""gather-complete: a gather sees every device allocated in the cache or in flight throughout.

This flags the root cause itself, before a double allocation needs the
missed device to be picked again, which is why racy variants are caught fast.
"""

from __future__ import annotations

from collections.abc import Mapping

from shmstress.api import Invariant, Scope, Workers, step_number
from shmstress.trackers.dra.invariants.common import naming


class GatherComplete(Invariant):
    name = "gather-complete"
    summary = "a gather contains every device allocated in the cache or in flight throughout it"
    fields = ("device", "claim", "gatherer", "start")

    def render(
        self, fields: Mapping[str, int], workers: Workers, params: Mapping[str, int]
    ) -> str:
        names = naming(params)
        return (
            f"GatherAllocatedState by {workers.describe(fields['gatherer'])} "
            f"(started at point {step_number(fields['start'])}) never saw device "
            f"{names.device(fields['device'])} as allocated, although claim "
            f"{names.claim(fields['claim'])} held it in the assume cache or in flight "
            "for the whole gather"
        )

    def scope(self, fields: Mapping[str, int], params: Mapping[str, int]) -> Scope:
        return Scope(
            subjects=(("claim", fields["claim"]), ("device", fields["device"])),
            worker=fields["gatherer"],
            start=fields["start"],
        )

    def outcome(self, fields: Mapping[str, int], params: Mapping[str, int]) -> str | None:
        return (f'device "{naming(params).device(fields["device"])}" never seen as allocated '
                "by this GatherAllocatedState")
