"""kopf's peering resources (kopf.dev/v1), which replicas use to agree which one acts
(core/common/peering.py).

kopf reads and patches them but does not define them; the operator ships them with its own CRDs. The status
is a map keyed by replica identity, so it is left open; there is no status subresource because kopf patches
the object itself.
"""

from __future__ import annotations

from typing import Any

GROUP = "kopf.dev"
CLUSTER_KIND = "ClusterKopfPeering"
NAMESPACED_KIND = "KopfPeering"


def _peering_crd(kind: str, plural: str, scope: str) -> dict[str, Any]:
    schema = {
        "type": "object",
        "properties": {
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
        "x-kubernetes-preserve-unknown-fields": True,
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": scope,
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
            "versions": [
                {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}
            ],
        },
    }


def peering_crds() -> list[dict[str, Any]]:
    return [
        _peering_crd(CLUSTER_KIND, "clusterkopfpeerings", "Cluster"),
        _peering_crd(NAMESPACED_KIND, "kopfpeerings", "Namespaced"),
    ]


def peering_object(name: str, namespace: str | None = None) -> dict[str, Any]:
    """The peering object replicas named `--peering NAME` meet in; kopf waits until it exists."""
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    kind = CLUSTER_KIND if namespace is None else NAMESPACED_KIND
    return {"apiVersion": f"{GROUP}/v1", "kind": kind, "metadata": meta}
