"""The Keycloak's NetworkPolicies: pure renderings of `spec.networkPolicy`, one per Deployment track.

A NetworkPolicy cannot say "from pods with the same label value as mine", and policies only ever add to each
other: one policy over every pod of the Keycloak, allowing JGroups from blue's cache cluster and from
green's, would let blue and green of different cache clusters reach each other. So there is one policy per
track (`<name>-keycloak-<track>`), over the pods of that track, allowing JGroups only from pods of the same
Keycloak in that track's cache cluster (any track: blue and green of one cache cluster form one JGroups
cluster by design). Without isolation, from the pods of the same Keycloak that have no cache cluster either.

Every pod of a track is always selected, whatever its cache cluster label: a pod is never left without a
policy (which would let everything in). HTTP(S) comes in from the spec's peers and from the operator's
namespace; the management port from the spec's `managementFrom` only. The kubelet's probes come from the
node, which network policies leave alone. Egress is not restricted.
"""

from __future__ import annotations

from typing import Any

from keycloak_operator.core import children
from keycloak_operator.kernel import names
from keycloak_operator.models.keycloak import KeycloakSpec
from keycloak_operator.models.network_policy import LabelSelector, NetworkPeer

JGROUPS_PORTS = (children.JGROUPS_PORT, children.JGROUPS_FD_PORT)


def _selector(selector: LabelSelector) -> dict[str, Any]:
    """As the API server stores it: empty parts left out (`{}` stays `{}`, it selects everything)."""
    out: dict[str, Any] = {}
    if selector.match_labels:
        out["matchLabels"] = dict(sorted(selector.match_labels.items()))
    if selector.match_expressions:
        out["matchExpressions"] = [e.wire() for e in selector.match_expressions]
    return out


def peer(source: NetworkPeer) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if source.namespace_selector is not None:
        out["namespaceSelector"] = _selector(source.namespace_selector)
    if source.pod_selector is not None:
        out["podSelector"] = _selector(source.pod_selector)
    if source.ip_block is not None:
        out["ipBlock"] = source.ip_block.wire()
    return out


def operator_peer(namespace: str) -> dict[str, Any]:
    """Every pod of the operator's namespace, named by the label the API server sets (a tenant cannot put
    it on another namespace). Anyone who can run a pod there can already use the operator's ServiceAccount,
    which can do far more than reach Keycloak's HTTP port."""
    return {"namespaceSelector": {"matchLabels": {names.LABEL_NAMESPACE_NAME: namespace}}}


def _tcp(port: int) -> dict[str, Any]:
    return {"protocol": "TCP", "port": port}


def same_cache_cluster(keycloak: str, cache_cluster: str | None) -> dict[str, Any]:
    """The pods that may join a pod's JGroups cluster: this Keycloak's, in the same cache cluster. Without
    isolation, this Keycloak's pods that have no cache cluster either (pods of a named one run another
    JGroups cluster: the default name against theirs)."""
    if cache_cluster:
        return {"matchLabels": {**names.server_pods(keycloak), names.LABEL_CACHE_CLUSTER: cache_cluster}}
    return {
        "matchLabels": names.server_pods(keycloak),
        "matchExpressions": [{"key": names.LABEL_CACHE_CLUSTER, "operator": "DoesNotExist"}],
    }


def policy(
    spec: KeycloakSpec,
    owner: children.Owner,
    *,
    track: str,
    cache_cluster: str | None,
    operator_namespace: str | None,
) -> dict[str, Any] | None:
    """The policy over the pods of `track`, whose cache cluster is `cache_cluster`; None when not asked for.
    `operator_namespace` is where the operator runs (None outside a cluster: no pod to name)."""
    wanted_policy = spec.network_policy
    if wanted_policy is None or not wanted_policy.enabled:
        return None
    rules: list[dict[str, Any]] = [
        {
            "from": [{"podSelector": same_cache_cluster(owner.name, cache_cluster)}],
            "ports": [_tcp(p) for p in JGROUPS_PORTS],
        }
    ]
    # A rule without `from` would let every source in: a rule is only written with at least one peer.
    http_from = [peer(p) for p in wanted_policy.ingress_from]
    if operator_namespace:
        http_from.append(operator_peer(operator_namespace))
    if http_from:
        rules.append({"from": http_from, "ports": [_tcp(p) for _, p in children.serving_ports(spec)]})
    management_from = [peer(p) for p in wanted_policy.management_from]
    if management_from:
        rules.append({"from": management_from, "ports": [_tcp(children.MANAGEMENT_PORT)]})
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            "name": names.network_policy(owner.name, track),
            "namespace": owner.namespace,
            "labels": {
                **names.component_labels(owner.name, names.COMPONENT_SERVER),
                names.LABEL_TRACK: track,
            },
            "ownerReferences": [owner.reference()],
        },
        "spec": {
            "podSelector": {"matchLabels": names.server_selector(owner.name, track)},
            "policyTypes": ["Ingress"],
            "ingress": rules,
        },
    }


def policies(
    spec: KeycloakSpec,
    owner: children.Owner,
    tracks: dict[str, str | None],
    operator_namespace: str | None,
) -> list[dict[str, Any]]:
    """One policy per track in use (track -> its pods' cache cluster)."""
    out = []
    for track, cluster in sorted(tracks.items()):
        rendered = policy(
            spec, owner, track=track, cache_cluster=cluster, operator_namespace=operator_namespace
        )
        if rendered is not None:
            out.append(rendered)
    return out
