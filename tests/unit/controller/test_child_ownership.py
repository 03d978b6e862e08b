"""A Keycloak never writes over, nor deletes, an object under one of its child names that it did not make;
it reports each one (Degraded, ChildNotOwned) instead. The rule itself, then every child kind of the
reconcile, then the names the blue-green machine writes."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from keycloak_operator.core import bluegreen as bg
from keycloak_operator.core import child_ownership, reconcile
from keycloak_operator.core.bluegreen import writes
from keycloak_operator.core.common import conditions
from keycloak_operator.kernel import names
from keycloak_operator.models.keycloak import KeycloakSpec
from keycloak_operator.models.upgrade_status import BlueGreenStatus
from tests.unit.builders import NOW, OWNER, deployment, observed, spec

NEW = "quay.io/keycloak/keycloak:27.0.1"


def platforms(kind: str, name: str, **meta: Any) -> dict[str, Any]:
    """Another owner's object: a controller reference to something else, and one to this Keycloak's uid
    that is not a controller reference (only the controller reference makes a child this Keycloak's)."""
    refs = [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "platform", "uid": "p1", "controller": True},
        {"apiVersion": names.API_VERSION, "kind": names.KEYCLOAK_KIND, "name": "kc", "uid": OWNER.uid},
    ]
    return {
        "apiVersion": "v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": OWNER.namespace, "uid": "theirs", "ownerReferences": refs},
        "spec": {"selector": {"app": "platform"}},
    }


def mine(obj: dict[str, Any]) -> dict[str, Any]:
    return {**obj, "metadata": {**obj["metadata"], "ownerReferences": [OWNER.reference()]}}


def keys(objects: list[dict[str, Any]]) -> set[child_ownership.Key]:
    return {child_ownership.key(o) for o in objects}


def degraded(decision: reconcile.Decision) -> dict[str, Any]:
    assert decision.status is not None
    return next(c for c in decision.status["conditions"] if c["type"] == conditions.DEGRADED)


# --- the rule ---------------------------------------------------------------------------------------------


def test_only_nothing_or_this_keycloaks_own_object_may_be_written() -> None:
    assert child_ownership.may_write(None, OWNER)
    assert child_ownership.may_write(mine(platforms("Service", "kc-service")), OWNER)
    assert not child_ownership.may_write(platforms("Service", "kc-service"), OWNER)
    assert not child_ownership.may_write({"metadata": {"name": "kc-service"}}, OWNER)  # no reference at all
    assert child_ownership.ours(platforms("Service", "kc-service"), OWNER) is None
    own = mine(platforms("Service", "kc-service"))
    assert child_ownership.ours(own, OWNER) is own


REFERENCE = st.fixed_dictionaries(
    {"uid": st.sampled_from([OWNER.uid, "other"]), "controller": st.booleans()},
)
STANDING = st.one_of(
    st.none(),
    st.lists(REFERENCE, max_size=3).map(lambda refs: {"metadata": {"ownerReferences": refs}}),
)
KEYS = st.tuples(st.sampled_from(["Service", "Deployment", "Ingress"]), st.sampled_from(["a", "b", "c"]))


@given(standing=st.dictionaries(KEYS, STANDING), planned=st.lists(KEYS))
def test_a_write_is_kept_exactly_when_its_name_is_free_or_this_keycloaks(
    standing: dict[child_ownership.Key, dict[str, Any] | None], planned: list[child_ownership.Key]
) -> None:
    objects = [{"kind": kind, "metadata": {"name": name}} for kind, name in planned]
    kept = child_ownership.allowed(objects, child_ownership.foreign(standing, OWNER))
    for obj in objects:
        there = standing.get(child_ownership.key(obj))
        refs = (there or {}).get("metadata", {}).get("ownerReferences", [])
        free = there is None or any(r["uid"] == OWNER.uid and r["controller"] for r in refs)
        assert (obj in kept) == free


def test_the_condition_names_every_object_left_alone() -> None:
    assert child_ownership.condition([], "ns") is None
    found = child_ownership.condition([("Service", "kc-service"), ("Deployment", "kc-keycloak")], "ns")
    assert found is not None
    assert (found.type, found.status, found.reason) == (conditions.DEGRADED, "True", "ChildNotOwned")
    assert found.message.startswith("Deployment kc-keycloak, Service kc-service in namespace ns")


# --- every child of the reconcile ---------------------------------------------------------------------------

# (kind, name, what the spec adds so that the child is wanted, the Observed field it is read into)
CHILDREN = [
    ("Service", "kc-service", {}, "public_service"),
    ("Deployment", "kc-keycloak", {}, "deployment"),
    ("Service", "kc-discovery-a", {}, "membership_services"),
    ("PodDisruptionBudget", "kc-keycloak", {"replicas": 2}, "pod_disruption_budget"),
    ("Ingress", "kc-keycloak", {"ingress": {}, "hostname": {"hostname": "sso.example.com"}}, "ingress"),
    (
        "ServiceMonitor",
        "kc-keycloak",
        {"monitoring": {"serviceMonitor": {"enabled": True}}},
        "service_monitor",
    ),
    ("NetworkPolicy", "kc-keycloak-a", {"networkPolicy": {"enabled": True}}, "network_policies"),
]


def standing(field: str, obj: dict[str, Any]) -> dict[str, Any]:
    """The Observed fields that show `obj` standing under its name."""
    plural = field in ("membership_services", "network_policies")
    return {field: (obj,) if plural else obj, "service_monitor_served": True}


@pytest.mark.parametrize(
    ("kind", "name", "extra", "field"), CHILDREN, ids=[c[0] + "/" + c[1] for c in CHILDREN]
)
def test_another_owners_object_is_not_written_and_is_reported(
    kind: str, name: str, extra: dict[str, Any], field: str
) -> None:
    s = spec(**extra)
    # Wanted: with nothing standing under the name, this pass writes it.
    fresh = reconcile.decide(s, observed(s, service_monitor_served=True), now=NOW)
    assert (kind, name) in keys(fresh.apply)
    theirs = platforms(kind, name)
    decision = reconcile.decide(s, observed(s, **standing(field, theirs)), now=NOW)
    assert (kind, name) not in keys([*decision.apply, *decision.delete, *decision.create])
    condition = degraded(decision)
    assert (condition["status"], condition["reason"]) == ("True", child_ownership.REASON)
    assert f"{kind} {name} in namespace ns" in condition["message"]
    assert [e.type for e in decision.events if e.reason == child_ownership.REASON] == ["Warning"]
    # The rest is reconciled as ever: every other child this pass writes is still written.
    assert keys(decision.apply) == keys(fresh.apply) - {(kind, name)}


@pytest.mark.parametrize(
    ("kind", "name", "extra", "field"), CHILDREN, ids=[c[0] + "/" + c[1] for c in CHILDREN]
)
def test_this_keycloaks_own_object_is_written(
    kind: str, name: str, extra: dict[str, Any], field: str
) -> None:
    s = spec(**extra)
    decision = reconcile.decide(s, observed(s, **standing(field, mine(platforms(kind, name)))), now=NOW)
    assert (kind, name) in keys(decision.apply)
    assert degraded(decision)["reason"] != child_ownership.REASON


def test_the_report_is_made_once_and_cleared_when_the_object_goes() -> None:
    s = spec()
    theirs = {"public_service": platforms("Service", "kc-service")}
    first = reconcile.decide(s, observed(s, **theirs), now=NOW)
    again = reconcile.decide(s, observed(s, status=first.status, **theirs), now=NOW)
    assert again.status is None and again.events == []  # nothing new to say, nothing written over
    assert ("Service", "kc-service") not in keys(again.apply)
    gone = reconcile.decide(s, observed(s, status=first.status), now=NOW)
    assert ("Service", "kc-service") in keys(gone.apply)
    assert degraded(gone)["status"] == "False"


# (kind, name, the spec, the Observed field): another owner's object this Keycloak does not want either
UNWANTED = [
    ("PodDisruptionBudget", "kc-keycloak", {"replicas": 1}, "pod_disruption_budget"),
    ("Ingress", "kc-keycloak", {}, "ingress"),
    ("ServiceMonitor", "kc-keycloak", {}, "service_monitor"),
    ("NetworkPolicy", "kc-keycloak-b", {"networkPolicy": {"enabled": True}}, "network_policies"),
    ("Service", "kc-discovery-b", {}, "membership_services"),  # no Deployment on track b
    ("Service", "kc-discovery", {}, "discovery_service"),  # the colour-named one, never created
]


@pytest.mark.parametrize(
    ("kind", "name", "extra", "field"), UNWANTED, ids=[c[0] + "/" + c[1] for c in UNWANTED]
)
def test_another_owners_object_the_keycloak_does_not_want_is_neither_deleted_nor_reported(
    kind: str, name: str, extra: dict[str, Any], field: str
) -> None:
    s = spec(**extra)
    decision = reconcile.decide(
        s, observed(s, deployment=deployment(s), **standing(field, platforms(kind, name))), now=NOW
    )
    assert (kind, name) not in keys([*decision.apply, *decision.delete])
    assert child_ownership.REASON not in {e.reason for e in decision.events}


def test_another_owners_deployment_is_not_taken_for_the_keycloaks_own() -> None:
    """Its replicas and version are not this Keycloak's: it is neither rolled nor reported as running."""
    s = spec()
    theirs = {**deployment(s), "metadata": platforms("Deployment", "kc-keycloak")["metadata"]}
    theirs["status"] = {"replicas": 1, "readyReplicas": 1, "updatedReplicas": 1, "availableReplicas": 1}
    decision = reconcile.decide(s, observed(s, deployment=theirs), now=NOW)
    assert decision.revision is None  # no version recorded as rolled out on someone else's pods
    assert ("Deployment", "kc-keycloak") not in keys(decision.apply)
    assert degraded(decision)["reason"] == child_ownership.REASON


# --- the blue-green machine's children ----------------------------------------------------------------------


def upgrading(state: str) -> BlueGreenStatus:
    return BlueGreenStatus(state=state, blue_track="a", green_track="b", green_image=NEW)


def test_the_serving_track_switch_is_reported_when_the_public_service_is_someone_elses() -> None:
    s = spec(image=NEW, upgradePolicy={"strategy": "BlueGreen"})
    machine = writes.touched([bg.SwitchTraffic(track="b")], OWNER, s, None)
    assert machine == {("Service", "kc-service")}
    blue = deployment(spec())
    theirs = {"public_service": platforms("Service", "kc-service")}
    decision = reconcile.decide(
        s,
        observed(s, deployment=blue, **theirs),
        now=NOW,
        blue_green=upgrading(bg.CUTTING_OVER),
        machine_writes=machine,
    )
    assert ("Service", "kc-service") not in keys(decision.apply)
    assert "Service kc-service in namespace ns" in degraded(decision)["message"]


def test_greens_names_are_reported_when_someone_elses() -> None:
    s = spec(image=NEW, upgradePolicy={"strategy": "BlueGreen"})
    machine = writes.touched([bg.ApplyGreen(image=NEW, track="b")], OWNER, s, None)
    assert machine == {
        ("Service", "kc-discovery-b"),
        ("Deployment", "kc-green-keycloak"),
        ("Service", "kc-green-discovery"),
    }
    theirs = {
        "green": platforms("Deployment", "kc-green-keycloak"),
        "green_discovery_service": platforms("Service", "kc-green-discovery"),
    }
    decision = reconcile.decide(
        s,
        observed(s, deployment=deployment(spec()), **theirs),
        now=NOW,
        blue_green=upgrading(bg.WAITING_FOR_GREEN),
        machine_writes=machine,
    )
    message = degraded(decision)["message"]
    assert "Deployment kc-green-keycloak, Service kc-green-discovery in namespace ns" in message


def test_every_child_an_action_writes_or_deletes_is_named() -> None:
    s: KeycloakSpec = spec(networkPolicy={"enabled": True})
    assert writes.touched([bg.ApplyGreen(image=NEW, track="b", apart=True)], OWNER, s, None) == {
        ("NetworkPolicy", "kc-keycloak-b"),
        ("Service", "kc-discovery-b"),
        ("Deployment", "kc-green-keycloak"),
    }
    assert writes.touched([bg.AdoptAsCanonical(image=NEW, track="b")], OWNER, s, None) == {
        ("Deployment", "kc-keycloak")
    }
    deleting: list[bg.Action] = [
        bg.DeleteGreen(),
        bg.DeleteBlue(uid="u"),
        bg.OrphanGreen(uid="g"),
        bg.DeleteGreenDiscovery(),
    ]
    assert writes.touched(deleting, OWNER, s, None) == {
        ("Deployment", "kc-green-keycloak"),
        ("Deployment", "kc-keycloak"),
        ("Service", "kc-green-discovery"),
    }
    creating: list[bg.Action] = [
        bg.CreateBackup("kc-pre-1", "cnpg", "db"),
        bg.CopyDatabase(job="j", source="db", target="db2"),
    ]
    assert writes.touched(creating, OWNER, s, None) == frozenset()


def test_each_action_is_returned_as_finished_intents_and_touched_names_match_them() -> None:
    """What the shell performs is the list `intents` renders, whole: creations for backups and copies,
    applies and deletes for children; `touched` lists exactly the applied and deleted names."""
    s = spec()
    cnpg = bg.CreateBackup(name="kc-backup-1", tier="cnpg", database="db")
    made = writes.intents(cnpg, OWNER, s, None)
    assert [type(i) for i in made] == [writes.Create] and made[0].obj["kind"] == "Backup"  # type: ignore[union-attr]
    copy = bg.CopyDatabase(job="kc-copy", source="db", target="kc-copy", backup="kc-backup-1", tier="cnpg")
    cluster = writes.intents(copy, OWNER, s, None, source_cluster={"spec": {"instances": 3}})
    assert [type(i) for i in cluster] == [writes.Create] and cluster[0].obj["kind"] == "Cluster"  # type: ignore[union-attr]
    orphan = writes.intents(bg.OrphanGreen(uid="u-green"), OWNER, s, None)
    assert orphan == [writes.Delete("Deployment", names.deployment("kc", green=True), "u-green", True)]
    for action in (bg.ApplyGreen(image=NEW, track="b"), bg.SwitchTraffic(track="b"), bg.DeleteBlue(uid="u")):
        done = writes.intents(action, OWNER, s, None)
        named = {
            (i.obj["kind"], i.obj["metadata"]["name"]) if isinstance(i, writes.Apply) else (i.kind, i.name)
            for i in done
            if not isinstance(i, writes.Create)
        }
        assert named == writes.touched([action], OWNER, s, None)
