"""Fake Nodes that kwok plays as kubelets (it manages only nodes with its label, see KWOK_SELECTOR)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

NODE_COUNT = 3
# kwok manages the nodes this label selects and no others, so a real node is left to its own kubelet.
KWOK_LABEL = ("type", "kwok")
KWOK_SELECTOR = f"{KWOK_LABEL[0]}={KWOK_LABEL[1]}"

# kwok's documented fake-node markers, minus its `kwok.x-k8s.io/node=fake:NoSchedule` taint: the operator's
# pods carry no toleration for it; a real node, if any, is tainted instead: only pods asking land there.
_ANNOTATIONS = {"node.alpha.kubernetes.io/ttl": "0", "kwok.x-k8s.io/node": "fake"}


def manifest(index: int) -> dict[str, object]:
    name = node_name(index)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": _ANNOTATIONS,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/role": "agent",
                "node-role.kubernetes.io/agent": "",
                KWOK_LABEL[0]: KWOK_LABEL[1],
                # A distinct zone per node so topology spread constraints have something to spread over.
                "topology.kubernetes.io/zone": f"zone-{index}",
            },
        },
        # kwok's node stage keeps given addresses; pods then get this as status.hostIP. 198.18.0.0/15 is
        # reserved for benchmarking, so it cannot collide with a real network, the pod or the service CIDR.
        "status": {"addresses": [{"type": "InternalIP", "address": f"198.18.0.{index + 1}"}]},
    }


def node_name(index: int) -> str:
    return f"kwok-node-{index}"


def names(count: int = NODE_COUNT) -> list[str]:
    return [node_name(i) for i in range(count)]


def manifest_list(count: int = NODE_COUNT) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": [manifest(i) for i in range(count)]})


def all_ready(nodes_json: str, expected: list[str]) -> bool:
    ready = set()
    for item in json.loads(nodes_json).get("items", []):
        for cond in item.get("status", {}).get("conditions", []):
            if cond.get("type") == "Ready" and cond.get("status") == "True":
                ready.add(item["metadata"]["name"])
    return set(expected) <= ready


def wait_ready(get_nodes_json: Callable[[], str], expected: list[str], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all_ready(get_nodes_json(), expected):
            return True
        time.sleep(0.3)
    return False
