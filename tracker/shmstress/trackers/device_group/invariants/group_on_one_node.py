"""group-on-one-node: a group is bound to exactly one node, by exactly one PreBind.

Checked when a group is bound: binding a group that is already bound means
two PreBinds both found it unbound and both allocated devices for it.
``since`` is where the reporting PreBind began.
"""

from __future__ import annotations

from collections.abc import Mapping

from shmstress.api import Invariant, Scope, Workers
from shmstress.trackers.device_group.invariants.common import naming, scope


class GroupOnOneNode(Invariant):
    name = "group-on-one-node"
    summary = "a group is bound to exactly one node, once"
    fields = ("group", "node", "other", "worker", "since")

    def render(
        self, fields: Mapping[str, int], workers: Workers, params: Mapping[str, int]
    ) -> str:
        names = naming(params)
        again = " again" if fields["node"] == fields["other"] else ""
        return (
            f"{workers.describe(fields['worker'])} bound {names.group(fields['group'])} "
            f"to {names.node(fields['node'])}{again} while another PreBind had bound it to "
            f"{names.node(fields['other'])}"
        )

    def scope(self, fields: Mapping[str, int], params: Mapping[str, int]) -> Scope:
        return scope((("group", fields["group"]),), fields)
