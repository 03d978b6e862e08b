"""The real node's record on disk: the pid of each of its processes and what teardown must undo (its
bridge, containerd socket and cgroup), so a later process (`make cluster-down`, the next run) can find it."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from localcluster.node_config import NodeLayout
from localcluster.state import Component


@dataclass
class NodeState:
    node_ip: str
    bridge: str
    socket: str
    cgroup: str
    components: list[Component] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)  # seconds per start step, for the README

    def save(self, layout: NodeLayout) -> None:
        tmp = layout.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2))
        tmp.replace(layout.state_file)


def load(layout: NodeLayout) -> NodeState | None:
    try:
        raw = json.loads(layout.state_file.read_text())
        components = [Component(**c) for c in raw.pop("components")]
        return NodeState(components=components, **raw)
    except (OSError, ValueError, TypeError, KeyError):
        return None
