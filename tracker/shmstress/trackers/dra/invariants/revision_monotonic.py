"""revision-monotonic: the allocated-devices revision never goes back; resourceVersions grow."""

from __future__ import annotations

from collections.abc import Mapping

from shmstress.api import Invariant, Workers

KIND_REVISION = 0
KIND_RESOURCE_VERSION = 1


class RevisionMonotonic(Invariant):
    name = "revision-monotonic"
    summary = "allocated-devices revision never decreases; resourceVersions strictly increase"
    fields = ("kind", "previous", "current")

    def render(
        self, fields: Mapping[str, int], workers: Workers, params: Mapping[str, int]
    ) -> str:
        what = (
            "allocated devices revision"
            if fields["kind"] == KIND_REVISION
            else "claim resourceVersion"
        )
        return f"{what} went from {fields['previous']} to {fields['current']}"
