"""spec.networkPolicy: JGroups only within one cache cluster (blue and green of different cache clusters
never reach each other), HTTP(S) only from the given peers and the operator, the management port only from
its own peers; one policy per track in use, and its life in the reconcile."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from keycloak_operator.core import children, network_policy, reconcile, versions
from keycloak_operator.core.decide_inputs import Observed
from keycloak_operator.core.deployment import render_deployment
from keycloak_operator.kernel import names
from keycloak_operator.models.keycloak import KeycloakSpec
from keycloak_operator.models.upgrade_status import BlueGreenStatus
from tests.unit import builders
from tests.unit.builders import OWNER, spec

INGRESS_NS = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}}}
PROMETHEUS = {
    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
    "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}},
}
ON: dict[str, Any] = {"enabled": True, "ingressFrom": [INGRESS_NS]}


def policy(s: KeycloakSpec, track: str = "a", cluster: str | None = "kc-v26", op: str | None = "kcop") -> Any:
    return network_policy.policy(s, OWNER, track=track, cache_cluster=cluster, operator_namespace=op)


# --- a small NetworkPolicy evaluator (ingress, one namespace, as the API defines it) ---------------------


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for e in selector.get("matchExpressions") or []:
        present, value = e["key"] in labels, labels.get(e["key"])
        if (e["operator"], present) in (("Exists", False), ("DoesNotExist", True)):
            return False
        if e["operator"] == "In" and value not in e["values"]:
            return False
        if e["operator"] == "NotIn" and value in e["values"]:
            return False
    return True


def _peer_admits(peer: dict[str, Any], source: dict[str, Any]) -> bool:
    if "ipBlock" in peer:
        return False  # the sources below are pods, named by labels
    ns_ok = (
        _selects(peer["namespaceSelector"], source["namespace_labels"])
        if "namespaceSelector" in peer
        else source["namespace"] == "ns"
    )
    return ns_ok and _selects(peer.get("podSelector", {}), source["labels"])


def allowed(
    policies: list[dict[str, Any]], source: dict[str, Any], target: dict[str, str], port: int
) -> bool:
    """Whether `source` (a pod: namespace, its labels, labels) may reach port `port` of the pod labelled
    `target` in namespace ns: isolated by any policy selecting it, then the union of their rules."""
    selecting = [p for p in policies if _selects(p["spec"]["podSelector"], target)]
    if not selecting:
        return True
    for p in selecting:
        for rule in p["spec"].get("ingress", []):
            ports = rule.get("ports")
            if ports and port not in [x["port"] for x in ports]:
                continue
            peers = rule.get("from")
            if not peers or any(_peer_admits(peer, source) for peer in peers):
                return True
    return False


def pod(track: str, cluster: str | None, keycloak: str = "kc") -> dict[str, str]:
    labels = {**names.component_labels(keycloak, names.COMPONENT_SERVER), names.LABEL_TRACK: track}
    if cluster:
        labels[names.LABEL_CACHE_CLUSTER] = cluster
    return labels


def source(labels: dict[str, str], namespace: str = "ns") -> dict[str, Any]:
    return {
        "namespace": namespace,
        "namespace_labels": {names.LABEL_NAMESPACE_NAME: namespace},
        "labels": labels,
    }


JGROUPS = network_policy.JGROUPS_PORTS
CLUSTERS = st.one_of(st.none(), st.sampled_from(["kc-v26", "kc-v27", "custom", "kc-26.7.3"]))


@given(CLUSTERS, CLUSTERS)
def test_jgroups_only_within_one_cache_cluster(blue: str | None, green: str | None) -> None:
    """Blue on track a, green on track b: their JGroups ports (data and failure detection) are reachable
    from each other exactly when they share a cache cluster; each reaches itself; nobody else does."""
    s = spec(networkPolicy=ON)
    policies = network_policy.policies(s, OWNER, {"a": blue, "b": green}, "kcop")
    blue_pod, green_pod = pod("a", blue), pod("b", green)
    for port in JGROUPS:
        assert allowed(policies, source(blue_pod), blue_pod, port)
        assert allowed(policies, source(green_pod), green_pod, port)
        assert allowed(policies, source(blue_pod), green_pod, port) == (blue == green)
        assert allowed(policies, source(green_pod), blue_pod, port) == (blue == green)
        # Another Keycloak's pods, an ingress controller's, the operator's: never JGroups.
        for stranger in (
            source(pod("a", blue, keycloak="other")),
            source({"app": "nginx"}, "ingress-nginx"),
            source({"app": "operator"}, "kcop"),
        ):
            assert not allowed(policies, stranger, blue_pod, port)


def test_both_jgroups_ports_are_opened() -> None:
    assert set(JGROUPS) == {7800, 57800}
    assert children.JGROUPS_FD_PORT == children.JGROUPS_PORT + 50000


def test_http_from_the_peers_and_the_operators_namespace_only() -> None:
    s = spec(networkPolicy=ON)
    policies = network_policy.policies(s, OWNER, {"a": "kc-v26"}, "kcop")
    target = pod("a", "kc-v26")
    assert allowed(policies, source({"app": "nginx"}, "ingress-nginx"), target, names.HTTP_PORT)
    assert allowed(policies, source({"any": "pod"}, "kcop"), target, names.HTTP_PORT)
    for stranger in (source({"app": "x"}, "tenant"), source(pod("a", "kc-v26", keycloak="other"))):
        assert not allowed(policies, stranger, target, names.HTTP_PORT)
    # The ingress controller reaches HTTP, not JGroups nor the management port.
    assert not allowed(policies, source({"app": "nginx"}, "ingress-nginx"), target, children.JGROUPS_PORT)
    assert not allowed(policies, source({"app": "nginx"}, "ingress-nginx"), target, children.MANAGEMENT_PORT)


def test_the_operator_is_named_by_the_namespace_label_the_api_server_sets() -> None:
    (_, http) = policy(spec(networkPolicy={"enabled": True}))["spec"]["ingress"]
    assert http["from"] == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kcop"}}}]


def test_with_tls_the_policy_opens_what_keycloak_serves() -> None:
    for tls, ports in (({"secret": "t"}, [8443]), ({"secret": "t", "httpEnabled": True}, [8443, 8080])):
        (_, http) = policy(spec(networkPolicy=ON, tls=tls))["spec"]["ingress"]
        assert [p["port"] for p in http["ports"]] == ports


def test_a_rule_is_never_written_without_peers() -> None:
    """A rule without `from` lets every source in: no peers and no known operator namespace means no HTTP
    rule at all (only JGroups in), never an open one."""
    rendered = policy(spec(networkPolicy={"enabled": True}), op=None)
    assert rendered["spec"]["policyTypes"] == ["Ingress"]
    (jgroups,) = rendered["spec"]["ingress"]
    assert jgroups["from"]
    for s in (spec(networkPolicy=ON), spec(networkPolicy={**ON, "managementFrom": [PROMETHEUS]})):
        for rule in policy(s)["spec"]["ingress"]:
            assert rule["from"] and rule["ports"]


def test_the_management_port_only_from_its_peers() -> None:
    s = spec(networkPolicy={**ON, "managementFrom": [PROMETHEUS]})
    policies = network_policy.policies(s, OWNER, {"a": None}, "kcop")
    target = pod("a", None)
    prometheus = {
        "namespace": "monitoring",
        "namespace_labels": {names.LABEL_NAMESPACE_NAME: "monitoring"},
        "labels": {"app.kubernetes.io/name": "prometheus"},
    }
    assert allowed(policies, prometheus, target, children.MANAGEMENT_PORT)
    assert not allowed(policies, prometheus, target, names.HTTP_PORT)
    assert not allowed(policies, source({"any": "pod"}, "kcop"), target, children.MANAGEMENT_PORT)
    # Without managementFrom there is no management rule: JGroups and HTTP(S) only.
    assert len(policy(spec(networkPolicy=ON))["spec"]["ingress"]) == 2


def test_peers_are_written_as_the_api_server_stores_them() -> None:
    s = spec(
        networkPolicy={
            "enabled": True,
            "ingressFrom": [
                {"namespaceSelector": {}},  # every namespace: stays {}
                {
                    "podSelector": {
                        "matchLabels": {},
                        "matchExpressions": [{"key": "a", "operator": "Exists"}],
                    }
                },
                {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}},
            ],
        }
    )
    (_, http) = policy(s, op=None)["spec"]["ingress"]
    assert http["from"] == [
        {"namespaceSelector": {}},
        {"podSelector": {"matchExpressions": [{"key": "a", "operator": "Exists"}]}},
        {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}},
    ]


def test_each_track_has_its_own_policy_over_its_own_pods() -> None:
    s = spec(networkPolicy=ON)
    a, b = network_policy.policies(s, OWNER, {"b": "y", "a": "x"}, "kcop")
    assert [a["metadata"]["name"], b["metadata"]["name"]] == ["kc-keycloak-a", "kc-keycloak-b"]
    for rendered, track in ((a, "a"), (b, "b")):
        assert rendered["spec"]["podSelector"] == {"matchLabels": names.server_selector("kc", track)}
        # Every pod of the track, whatever its cache cluster label: none is ever left outside a policy.
        assert names.LABEL_CACHE_CLUSTER not in rendered["spec"]["podSelector"]["matchLabels"]
        dep = render_deployment(OWNER, s, image=s.image, track=track, version="v")
        assert rendered["spec"]["podSelector"]["matchLabels"].items() <= (
            dep["spec"]["template"]["metadata"]["labels"].items()
        )


def test_off_unless_enabled() -> None:
    assert policy(spec()) is None
    assert policy(spec(networkPolicy={"ingressFrom": [INGRESS_NS]})) is None
    assert network_policy.policies(spec(networkPolicy={"enabled": False}), OWNER, {"a": None}, "k") == []


@pytest.mark.parametrize(
    "peer",
    [
        {},
        {"ipBlock": {"cidr": "10.0.0.0/8"}, "podSelector": {}},
        {"ipBlock": {"cidr": "10.0.0.1"}},
        {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["x"]}},
        # What the pattern admits but the API server refuses in a NetworkPolicy.
        {"ipBlock": {"cidr": "1:::2/64"}},
        {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.0.0.0/8"]}},
        {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["192.168.0.0/16"]}},
        {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["fd00::/16"]}},
        {"podSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}},
        {"podSelector": {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["b"]}]}},
        {"podSelector": {"matchExpressions": [{"key": "a", "operator": "Near", "values": ["b"]}]}},
        {"podSelector": {"matchLabels": {"not a key": "v"}}},
        {"namespaceSelector": {"matchLabels": {"k": "not a value"}}},
    ],
)
def test_hostile_peers_are_refused_naming_the_field(peer: dict[str, Any]) -> None:
    with pytest.raises(ValidationError) as e:
        spec(networkPolicy={"enabled": True, "ingressFrom": [peer]})
    assert "networkPolicy" in str(e.value)


def test_the_policy_is_not_part_of_the_version() -> None:
    assert versions.spec_hash(spec(networkPolicy=ON)) == versions.spec_hash(spec())


# --- its life in the reconcile ------------------------------------------------------------------------------

OLD, NEW = "quay.io/keycloak/keycloak:26.7.3", "quay.io/keycloak/keycloak:27.0.1"
ISOLATED: dict[str, Any] = {"cacheIsolation": {"autoRevision": True}, "networkPolicy": ON}


def deployment(s: KeycloakSpec, image: str, track: str, *, green: bool = False) -> dict[str, Any]:
    dep = render_deployment(OWNER, s, image=image, track=track, version="v", green=green)
    dep["metadata"]["uid"] = f"dep-{track}"
    return dep


def observed(
    s: KeycloakSpec,
    *,
    canonical: dict[str, Any] | None = None,
    green: dict[str, Any] | None = None,
    policies: tuple[dict[str, Any], ...] = (),
    membership: tuple[dict[str, Any], ...] = (),
) -> Observed:
    return builders.observed(
        s,
        deployment=canonical,
        green=green,
        network_policies=policies,
        operator_namespace="kcop",
        membership_services=membership,
    )


def written(decision: reconcile.Decision) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in decision.apply if o["kind"] == "NetworkPolicy"}


def jgroups_from(p: dict[str, Any]) -> dict[str, str]:
    return dict(p["spec"]["ingress"][0]["from"][0]["podSelector"]["matchLabels"])


def test_without_isolation_only_pods_without_a_cache_cluster() -> None:
    (jgroups, _) = policy(spec(networkPolicy=ON), cluster=None)["spec"]["ingress"]
    assert jgroups["from"] == [
        {
            "podSelector": {
                "matchLabels": names.server_pods("kc"),
                "matchExpressions": [{"key": names.LABEL_CACHE_CLUSTER, "operator": "DoesNotExist"}],
            }
        }
    ]


def test_a_new_keycloak_gets_the_policy_of_its_track() -> None:
    s = spec(**ISOLATED)
    decision = reconcile.decide(s, observed(s), now="t")
    (only,) = written(decision).values()
    assert only["metadata"]["name"] == "kc-keycloak-a"
    assert jgroups_from(only)[names.LABEL_CACHE_CLUSTER] == "kc-v26"


def test_during_blue_green_each_colour_is_let_in_by_its_own_cache_cluster() -> None:
    """Green's policy follows green's Deployment; blue's keeps blue's cluster, even though the spec
    already names green's image."""
    blue_spec, new = spec(**ISOLATED), spec(**{**ISOLATED, "image": NEW})
    blue, green = deployment(blue_spec, OLD, "a"), deployment(new, NEW, "b", green=True)
    running = BlueGreenStatus(
        state="WaitingForGreen", blue_image=OLD, green_image=NEW, blue_track="a", green_track="b"
    )
    decision = reconcile.decide(new, observed(new, canonical=blue, green=green), now="t", blue_green=running)
    policies = written(decision)
    assert jgroups_from(policies["kc-keycloak-a"])[names.LABEL_CACHE_CLUSTER] == "kc-v26"
    assert jgroups_from(policies["kc-keycloak-b"])[names.LABEL_CACHE_CLUSTER] == "kc-v27"
    assert decision.delete == []


def test_a_track_without_a_deployment_loses_its_policy_and_foreign_ones_stay() -> None:
    s = spec(**ISOLATED)
    canonical = deployment(s, OLD, "b")  # promoted green: the canonical Deployment is on track b now
    stale = copy.deepcopy(policy(s, "a", "kc-v26"))
    stale["metadata"]["uid"] = "np-a"
    current = copy.deepcopy(policy(s, "b", "kc-v26"))
    decision = reconcile.decide(s, observed(s, canonical=canonical, policies=(stale, current)), now="t")
    assert decision.delete == [stale]
    assert written(decision) == {}
    foreign = copy.deepcopy(stale)
    foreign["metadata"]["ownerReferences"] = [{**OWNER.reference(), "uid": "other"}]
    assert reconcile.decide(s, observed(s, canonical=canonical, policies=(foreign,)), now="t").delete == []


def test_disabled_deletes_every_policy_this_keycloak_made() -> None:
    s = spec(**ISOLATED)
    mine = tuple(network_policy.policies(s, OWNER, {"a": "kc-v26", "b": "kc-v27"}, "kcop"))
    off = spec(cacheIsolation={"autoRevision": True}, networkPolicy={"enabled": False})
    decision = reconcile.decide(
        off, observed(off, canonical=deployment(off, OLD, "a"), policies=mine), now="t"
    )
    assert sorted(p["metadata"]["name"] for p in decision.delete) == ["kc-keycloak-a", "kc-keycloak-b"]


def test_a_new_cache_cluster_moves_the_policy_in_the_same_pass_as_the_pods() -> None:
    """Recreate into another cache cluster: the rendered Deployment and its track's policy are written
    together, so the new pods never start under the old cluster's rule."""
    old = spec(networkPolicy=ON, cacheIsolation={"clusterName": "one"})
    new = spec(networkPolicy=ON, cacheIsolation={"clusterName": "two"})
    before = policy(old, "a", "one")
    discovery = children.membership_service(OWNER, "a", "one")
    decision = reconcile.decide(
        new,
        observed(new, canonical=deployment(old, OLD, "a"), policies=(before,), membership=(discovery,)),
        now="t",
    )
    assert decision.apply[0]["kind"] == "Deployment"
    # The track's membership Service moves to the new cluster in the same pass, after the Deployment.
    (moved,) = [o for o in decision.apply[1:] if o["metadata"]["name"] == "kc-discovery-a"]
    assert moved["spec"]["selector"][names.LABEL_CACHE_CLUSTER] == "two"
    assert jgroups_from(written(decision)["kc-keycloak-a"])[names.LABEL_CACHE_CLUSTER] == "two"
