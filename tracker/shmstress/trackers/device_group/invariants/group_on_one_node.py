"""group-on-one-node: a group is bound to exactly one node, by exactly one PreBind.

Checked when a group is bound: binding a group that is already bound means
two PreBinds both found it unbound and both allocated devices for it.
``since`` is where the reporting PreBind began.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from shmstress.core.workers import WorkerInfo, describe_worker
from shmstress.trackers.device_group.names import Naming


class GroupOnOneNode:
    name = "group-on-one-node"
    summary = "a group is bound to exactly one node, once"
    fields = ("group", "node", "other", "worker", "since")

    def render(
        self, fields: Mapping[str, int], workers: Sequence[WorkerInfo], params: Mapping[str, int]
    ) -> str:
        names = Naming(params["pods-per-group"])
        again = " again" if fields["node"] == fields["other"] else ""
        return (
            f"{describe_worker(fields['worker'], workers)} bound {names.group(fields['group'])} "
            f"to {names.node(fields['node'])}{again} while another PreBind had bound it to "
            f"{names.node(fields['other'])}"
        )
