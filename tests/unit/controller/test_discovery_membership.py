"""Discovery by membership (ADR 0018): a pod finds only pods of its own cache cluster, on every Keycloak
version, and the reconcile writes and deletes the per-track Services in an order that never leaves pods
without their discovery."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from keycloak_operator.core import children, discovery, network_policy, reconcile
from keycloak_operator.core.deployment import render_deployment
from keycloak_operator.kernel import names
from keycloak_operator.models.upgrade_status import BlueGreenStatus
from tests.unit import builders
from tests.unit.builders import OWNER, spec

OLD = "quay.io/keycloak/keycloak:26.7.0"
NEW = "quay.io/keycloak/keycloak:26.7.3"
NAMED = {"cacheIsolation": {"clusterName": "kc-blue"}}


def pod_labels(track: str, cluster: str | None) -> dict[str, str]:
    dep = children.deployment(
        children.WorkloadInputs(
            owner=OWNER, spec=spec(), track=track, cache_cluster=cluster, admin_secret="s", version="v"
        )
    )
    return dict(dep["spec"]["template"]["metadata"]["labels"])


def selects(service: dict[str, Any], labels: dict[str, str]) -> bool:
    """A Service selector: every key present with that value (Kubernetes' rule; absence never matches)."""
    return all(labels.get(k) == v for k, v in service["spec"]["selector"].items())


clusters = st.one_of(st.none(), st.sampled_from(["kc-v25", "kc-v26", "kc-v27"]))


@given(st.dictionaries(st.sampled_from(names.TRACKS), clusters, min_size=1), st.data())
def test_a_pod_discovers_exactly_the_pods_of_its_own_cache_cluster(
    tracks: dict[str, str | None], data: st.DataObject
) -> None:
    """Whatever cache cluster each track runs (named or not), the Service a pod queries lists a pod of this
    Keycloak if and only if the two are in the same cache cluster, whatever their tracks."""
    services = {t: children.membership_service(OWNER, t, c) for t, c in tracks.items()}
    for mine, my_cluster in tracks.items():
        for theirs, their_cluster in tracks.items():
            found = selects(services[mine], pod_labels(theirs, their_cluster))
            assert found == (my_cluster == their_cluster), (mine, my_cluster, theirs, their_cluster)
    # Nobody else's pods: another Keycloak's, and this Keycloak's non-server pods.
    track = data.draw(st.sampled_from(sorted(tracks)))
    other = children.Owner(name="other", namespace="ns", uid="u2")
    stranger = children.deployment(
        children.WorkloadInputs(
            owner=other, spec=spec(), track=track, cache_cluster=tracks[track], admin_secret="s", version="v"
        )
    )["spec"]["template"]["metadata"]["labels"]
    assert not selects(services[track], stranger)


def test_each_pod_queries_only_its_tracks_service() -> None:
    for track in names.TRACKS:
        dep = render_deployment(OWNER, spec(), image=NEW, track=track, version="v", green=True)
        assert discovery.queries(dep) == [f"kc-discovery-{track}.ns.svc.cluster.local"]


def test_queries_reads_a_list_and_nothing_else() -> None:
    dep = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "env": [
                                {
                                    "name": "JAVA_OPTS_APPEND",
                                    "value": "-Xmx1g -Djgroups.dns.query=a.x, b.y -Dother=1",
                                },
                            ]
                        }
                    ]
                }
            }
        }
    }
    assert discovery.queries(dep) == ["a.x"]  # a space ends the option: JGroups would see "a.x," then "b.y"
    dep["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] = "-Djgroups.dns.query=a.x,b.y"
    assert discovery.queries(dep) == ["a.x", "b.y"]
    assert discovery.queries({}) == []


# --- the reconcile ------------------------------------------------------------------------------------------


def rolled_out(dep: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dep)
    replicas = out["spec"]["replicas"]
    out["metadata"].update(generation=1, uid="dep-uid")
    out["status"] = {
        "observedGeneration": 1,
        **dict.fromkeys(("replicas", "updatedReplicas", "readyReplicas", "availableReplicas"), replicas),
    }
    return out


def service_names(objs: list[dict[str, Any]]) -> list[str]:
    return [o["metadata"]["name"] for o in objs if o["kind"] == "Service"]


def test_a_new_keycloak_gets_its_tracks_service_before_its_pods_and_no_legacy_one() -> None:
    s = spec(**NAMED)
    decision = reconcile.decide(s, builders.observed(s), now=builders.NOW)
    kinds = [f"{o['kind']}/{o['metadata']['name']}" for o in decision.apply]
    assert kinds.index("Service/kc-discovery-a") < kinds.index("Deployment/kc-keycloak")
    assert "Service/kc-discovery" not in kinds and "Service/kc-discovery-b" not in kinds
    (svc,) = [o for o in decision.apply if o["metadata"]["name"] == "kc-discovery-a"]
    assert svc["spec"]["selector"] == names.membership_selector("kc", "kc-blue")


def test_green_gets_its_tracks_service_and_a_settled_world_writes_nothing() -> None:
    s = spec(image=NEW, upgradePolicy={"strategy": "BlueGreen"}, **NAMED)
    blue = rolled_out(render_deployment(OWNER, s, image=OLD, track="a", version="v1"))
    green = rolled_out(render_deployment(OWNER, s, image=NEW, track="b", version="v2", green=True))
    status = BlueGreenStatus(
        state="WaitingForGreen", blue_image=OLD, green_image=NEW, blue_track="a", green_track="b"
    )
    seen = builders.observed(s, deployment=blue, green=green)
    decision = reconcile.decide(s, seen, now=builders.NOW, blue_green=status)
    assert sorted(service_names(decision.apply)) == ["kc-discovery-a", "kc-discovery-b"]
    existing = tuple(o for o in decision.apply if o["metadata"]["name"].startswith("kc-discovery-"))
    settled = builders.observed(s, deployment=blue, green=green, membership_services=existing)
    again = reconcile.decide(s, settled, now=builders.NOW, blue_green=status)
    assert not [n for n in service_names(again.apply) if n.startswith("kc-discovery-")]
    assert not again.delete


def owned(obj: dict[str, Any]) -> dict[str, Any]:
    return {**obj, "metadata": {**obj["metadata"], "uid": "svc-uid"}}


def test_a_tracks_service_goes_only_when_no_deployment_of_that_track_is_left() -> None:
    s = spec(**NAMED)
    canonical = rolled_out(builders.deployment(s))
    leftover = owned(children.membership_service(OWNER, "b", "kc-v26"))
    mine = owned(children.membership_service(OWNER, "a", "kc-blue"))
    seen = builders.observed(s, deployment=canonical, membership_services=(mine, leftover))
    decision = reconcile.decide(s, seen, now=builders.NOW)
    assert [o["metadata"]["name"] for o in decision.delete] == ["kc-discovery-b"]
    # While green of track b exists (even being deleted), its Service stays.
    green = rolled_out(render_deployment(OWNER, s, image=NEW, track="b", version="v2", green=True))
    green["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    status = BlueGreenStatus(
        state="RollingBack", blue_image=s.image, green_image=NEW, blue_track="a", green_track="b"
    )
    with_green = builders.observed(s, deployment=canonical, green=green, membership_services=(mine, leftover))
    assert not reconcile.decide(s, with_green, now=builders.NOW, blue_green=status).delete


def test_during_promotion_greens_track_keeps_its_service_with_no_deployment_at_all() -> None:
    """Between OrphanGreen and AdoptAsCanonical green's pods run with no Deployment: their discovery stays."""
    s = spec(image=NEW, upgradePolicy={"strategy": "BlueGreen"}, **NAMED)
    service = owned(children.membership_service(OWNER, "b", "kc-blue"))
    status = BlueGreenStatus(
        state="Promoting", blue_image=OLD, green_image=NEW, blue_track="a", green_track="b"
    )
    seen = builders.observed(s, membership_services=(service,))
    decision = reconcile.decide(s, seen, now=builders.NOW, blue_green=status)
    assert not decision.delete


def test_a_service_under_our_name_that_we_did_not_make_is_left_alone() -> None:
    s = spec(**NAMED)
    canonical = rolled_out(builders.deployment(s))
    foreign = children.membership_service(OWNER, "a", "x")
    foreign["metadata"]["ownerReferences"] = [{"uid": "someone-else", "controller": True}]
    stray = {**foreign, "metadata": {**foreign["metadata"], "name": "kc-discovery-b"}}
    seen = builders.observed(s, deployment=canonical, membership_services=(foreign, stray))
    decision = reconcile.decide(s, seen, now=builders.NOW)
    assert not [n for n in service_names(decision.apply) if n.startswith("kc-discovery-")]
    assert not decision.delete


def legacy_template(dep: dict[str, Any]) -> dict[str, Any]:
    """`dep` as rendered before ADR 0018: its pods query both colour-named Services."""
    out = copy.deepcopy(dep)
    (container,) = out["spec"]["template"]["spec"]["containers"]
    for env in container["env"]:
        if env["name"] == "JAVA_OPTS_APPEND":
            env["value"] = (
                "-Djgroups.dns.query=kc-discovery.ns.svc.cluster.local,"
                "kc-green-discovery.ns.svc.cluster.local"
            )
    return out


def test_the_legacy_service_stays_while_older_pods_may_query_it_then_goes() -> None:
    s = spec(**NAMED)
    current = rolled_out(builders.deployment(s))
    legacy = owned(children.discovery_service(OWNER, "a", "kc-blue"))
    # Older pods: their Deployment's template queries it. It is kept, reconciled as it always was.
    old = builders.observed(s, deployment=rolled_out(legacy_template(current)), discovery_service=legacy)
    decision = reconcile.decide(s, old, now=builders.NOW)
    assert "kc-discovery" not in [o["metadata"]["name"] for o in decision.delete]
    # The new template is rolling out: the old ReplicaSet's pods may still run.
    rolling = copy.deepcopy(current)
    rolling["status"]["updatedReplicas"] = 0
    seen = builders.observed(s, deployment=rolling, discovery_service=legacy)
    assert not reconcile.decide(s, seen, now=builders.NOW).delete
    # Every pod runs the new template: it goes.
    done = builders.observed(s, deployment=current, discovery_service=legacy)
    assert [o["metadata"]["name"] for o in reconcile.decide(s, done, now=builders.NOW).delete] == [
        "kc-discovery"
    ]
    # Not ours: left alone.
    foreign = {**legacy, "metadata": {**legacy["metadata"], "ownerReferences": []}}
    mine_not = builders.observed(s, deployment=current, discovery_service=foreign)
    assert not reconcile.decide(s, mine_not, now=builders.NOW).delete


def test_the_legacy_service_stays_through_an_upgrade_in_flight() -> None:
    s = spec(image=NEW, upgradePolicy={"strategy": "BlueGreen"}, **NAMED)
    legacy = owned(children.discovery_service(OWNER, "b", "kc-blue"))
    status = BlueGreenStatus(
        state="Promoting", blue_image=OLD, green_image=NEW, blue_track="a", green_track="b"
    )
    seen = builders.observed(s, discovery_service=legacy)
    assert discovery.legacy_in_use(OWNER, [None, None], upgrade_in_flight=True)
    assert not reconcile.decide(s, seen, now=builders.NOW, blue_green=status).delete


def policy_admits(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """matchLabels and the DoesNotExist expressions network_policy.same_cache_cluster writes."""
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for expression in selector.get("matchExpressions", []):
        assert expression["operator"] == "DoesNotExist"
        if expression["key"] in labels:
            return False
    return True


@given(clusters, clusters, st.sampled_from(names.TRACKS), st.sampled_from(names.TRACKS))
def test_the_network_policy_admits_every_peer_discovery_lists(
    mine: str | None, theirs: str | None, my_track: str, their_track: str
) -> None:
    """Discovery and the NetworkPolicies agree: a pod listed by my track's Service may reach my JGroups
    ports, and one the policy shuts out is never listed."""
    service = children.membership_service(OWNER, my_track, mine)
    peer = pod_labels(their_track, theirs)
    admitted = policy_admits(network_policy.same_cache_cluster("kc", mine), peer)
    assert selects(service, peer) == admitted == (mine == theirs)


@given(st.dictionaries(st.sampled_from(names.TRACKS), clusters, min_size=1))
def test_tracks_kept_apart_discover_only_their_own_pods_whatever_the_names(
    tracks: dict[str, str | None],
) -> None:
    """On a database-copy upgrade blue and green run versions that must never share a cluster, even when
    their names are equal (autoRevision gives one name to a whole major) or ignored (before 26.7)."""
    services = {t: children.membership_service(OWNER, t, c, apart=True) for t, c in tracks.items()}
    for mine, my_cluster in tracks.items():
        for theirs, their_cluster in tracks.items():
            found = selects(services[mine], pod_labels(theirs, their_cluster))
            assert found == (mine == theirs and my_cluster == their_cluster), (mine, theirs)


def test_tracks_are_apart_from_a_copy_upgrade_on_until_a_shared_one() -> None:
    assert not discovery.tracks_apart(None)
    assert not discovery.tracks_apart(BlueGreenStatus(state="WaitingForGreen", path="BlueGreenShared"))
    assert not discovery.tracks_apart(BlueGreenStatus(state="WaitingForGreen"))  # recorded before copies
    for state in ("BackingUp", "WaitingForGreen", "Completed", "Idle"):
        assert discovery.tracks_apart(BlueGreenStatus(state=state, path="BlueGreenCopy"))


def test_the_reconcile_keeps_a_copy_upgrades_tracks_apart() -> None:
    s = spec(**NAMED)
    stored = BlueGreenStatus(
        state="WaitingForGreen", path="BlueGreenCopy", blue_track="a", green_track="b", blue_image=OLD
    )
    decision = reconcile.decide(
        s, builders.observed(s, deployment=builders.deployment(s)), now=builders.NOW, blue_green=stored
    )
    (service,) = [o for o in decision.apply if o["metadata"]["name"] == names.membership_service("kc", "a")]
    assert service["spec"]["selector"][names.LABEL_TRACK] == "a"
