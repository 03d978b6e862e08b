"""Adoption (core/replication/adoption.py): an unmarked object is taken over only by a resource that asks
(`kcop.dev/adopt: "true"`) and may; never Keycloak's own objects, never another resource's."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from keycloak_operator.core.replication import ObjectKey
from keycloak_operator.core.replication.adoption import ADOPTING, flags, within_realm
from keycloak_operator.core.replication.client import plan_clients
from keycloak_operator.core.replication.client_scope import plan_client_scopes, scope_resource
from keycloak_operator.core.replication.in_realm import client_resource
from keycloak_operator.core.replication.realm import plan_realms
from keycloak_operator.core.replication.resources import realm_target
from keycloak_operator.core.replication.round import Round, collect
from keycloak_operator.core.replication.sync import Resource, Verdict
from keycloak_operator.kernel import names
from tests.unit import builders
from tests.unit.replication.test_replication_sync import HOME, T0, client, in_keycloak, unmarked

ADOPT = {"adopt": True}


def asking(r: Resource, **kw: Any) -> Resource:
    return replace(r, **{**ADOPT, **kw})


def test_an_unmarked_object_is_a_conflict_unless_its_resource_asks() -> None:
    web = client("home", "web")
    scope = plan_clients([web], [unmarked("web", "u1")])
    assert scope.plan.is_empty() and not scope.adopted
    assert scope.verdicts[web.key].phase == "Conflict"
    assert "not adopted" not in scope.verdicts[web.key].message


def test_a_resource_that_asks_adopts_it_with_one_update_writing_the_marker() -> None:
    web = asking(client("home", "web"))
    scope = plan_clients([web], [unmarked("web", "u1")])
    assert scope.adopted == {web.key: "u1"}
    assert scope.remote_ids[web.key] == "u1"
    assert not scope.plan.creates and not scope.plan.deletes
    [update] = scope.plan.updates
    assert (update.key, update.remote_id, update.previous_hash) == (web.key, "u1", ADOPTING)
    assert scope.verdicts[web.key] == Verdict("Ready", "InSync")  # once the update is written


def test_once_marked_the_next_round_is_quiet_and_not_an_adoption() -> None:
    web = asking(client("home", "web"))
    scope = plan_clients([web], [in_keycloak(web, "u1")])
    assert scope.plan.is_empty() and not scope.adopted
    assert scope.verdicts[web.key] == Verdict("Ready", "InSync")


def test_the_adoption_is_reported_as_such() -> None:
    web = asking(client("home", "web"))
    scope = plan_clients([web], [unmarked("web", "u1")])
    rnd = Round()
    collect(rnd, scope, {web.key: web})
    assert [(e.type, e.reason) for e in rnd.events[web.key]] == [("Normal", "Adopted")]
    assert "u1" in rnd.events[web.key][0].message


@pytest.mark.parametrize("client_id", ["realm-management", "admin-cli", "broker", "account"])
def test_keycloaks_own_clients_are_never_adopted(client_id: str) -> None:
    own = asking(client("home", "x", client_id))
    scope = plan_clients([own], [unmarked(client_id, "u1")])
    assert scope.plan.is_empty() and not scope.adopted
    assert "is Keycloak's own" in scope.verdicts[own.key].message


def test_another_resources_object_is_never_adopted() -> None:
    theirs = client("home", "web")
    mine = asking(client("home", "web2", "web", age=10))
    scope = plan_clients([theirs, mine], [in_keycloak(theirs, "u1")])
    assert not scope.adopted and not scope.plan.updates
    assert scope.verdicts[mine.key].phase == "Conflict"
    assert "another resource's object is never adopted" in scope.verdicts[mine.key].message


def test_of_two_asking_the_oldest_adopts_and_the_other_names_it() -> None:
    old, young = asking(client("home", "a", "web")), asking(client("home", "b", "web", age=5))
    scope = plan_clients([young, old], [unmarked("web", "u1")])
    assert scope.adopted == {old.key: "u1"}
    assert scope.verdicts[young.key].phase == "Conflict"
    assert str(old.key) in scope.verdicts[young.key].message


def test_a_resource_refused_adoption_stays_in_conflict_saying_why() -> None:
    other = client("team-x", "web", adopt_refused="only resources in namespace home ... may adopt")
    scope = plan_clients([other], [unmarked("web", "u1")])
    assert not scope.adopted and scope.plan.is_empty()
    assert "not adopted: only resources in namespace home" in scope.verdicts[other.key].message


def test_a_renamed_resource_with_an_object_adopts_nothing() -> None:
    """Its own object and the adopted one would be duplicates of one key, one of them deleted."""
    web = client("home", "web", "old-id")
    renamed = asking(client("home", "web", "new-id"))
    scope = plan_clients([renamed], [in_keycloak(web, "u1"), unmarked("new-id", "u2")])
    assert not scope.adopted
    assert not scope.plan.deletes and not scope.plan.duplicates
    assert "already has an object" in scope.verdicts[renamed.key].message


def test_the_flags_come_from_the_annotation_and_the_kinds_rule() -> None:
    asked = {"metadata": {"annotations": {names.ANNOTATION_ADOPT: "True"}}}
    assert flags(asked) == {"adopt": True, "adopt_refused": ""}
    assert flags(asked, "no") == {"adopt": False, "adopt_refused": "no"}
    assert flags({"metadata": {}}, "no") == {"adopt": False, "adopt_refused": ""}
    assert within_realm(ObjectKey("KeycloakClient", "home", "c"), HOME) == ""
    assert "namespace home" in within_realm(ObjectKey("KeycloakClient", "team", "c"), HOME)


def client_obj(namespace: str, adopt: str | None) -> dict[str, Any]:
    annotations = {names.ANNOTATION_ADOPT: adopt} if adopt is not None else {}
    return {
        "kind": names.CLIENT_KIND,
        "metadata": {"namespace": namespace, "name": "web", "annotations": annotations},
        "spec": {"realm": {"name": "main", "namespace": "home"}, "clientId": "web"},
    }


def test_only_the_realms_namespace_may_adopt_a_client_in_it() -> None:
    assert client_resource(client_obj("home", "true"), {}).adopt
    team = client_resource(client_obj("team", "true"), {})
    assert not team.adopt and "namespace home" in team.adopt_refused
    assert not client_resource(client_obj("home", None), {}).adopt


def realm_obj(namespace: str, server: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": names.REALM_KIND,
        "metadata": {"namespace": namespace, "name": "main", "annotations": {names.ANNOTATION_ADOPT: "true"}},
        "spec": {"server": server},
    }


def test_a_realm_is_adopted_only_from_its_keycloaks_namespace_or_with_its_own_login() -> None:
    wire = builders.spec(realmNamespaces=["team"]).wire()
    keycloak = {"kind": "Keycloak", "metadata": {"namespace": "idp", "name": "sso"}, "spec": wire}
    keycloaks = {("idp", "sso"): keycloak}
    own = realm_target(realm_obj("idp", {"keycloak": {"name": "sso"}}), keycloaks).resource
    assert own.adopt
    allowed = realm_target(realm_obj("team", {"keycloak": {"name": "sso", "namespace": "idp"}}), keycloaks)
    assert not allowed.resource.adopt and "only namespace idp" in allowed.resource.adopt_refused
    external = {"external": {"url": "https://kc.example.com", "adminSecret": {"name": "admin"}}}
    assert realm_target(realm_obj("team", external), {}).resource.adopt


def realm(name: str, **kw: Any) -> Resource:
    return Resource(ObjectKey(names.REALM_KIND, "idp", name), name, {"realm": name}, T0, **kw)


def test_the_master_realm_is_never_adopted() -> None:
    master = realm("master", adopt=True)
    scope = plan_realms([master], [], [{"realm": "master", "id": "master", "attributes": {}}])
    assert not scope.adopted and scope.plan.is_empty()
    other = realm("corp", adopt=True)
    assert plan_realms([other], [], [{"realm": "corp", "attributes": {}}]).adopted == {other.key: "corp"}


def test_a_client_scope_is_never_adopted() -> None:
    """Clients of every namespace may attach a hand-made scope; marked, it would be usable by one only."""
    obj = {
        "kind": names.CLIENT_SCOPE_KIND,
        "metadata": {"namespace": "home", "name": "groups", "annotations": {names.ANNOTATION_ADOPT: "true"}},
        "spec": {"realm": {"name": "main"}, "name": "groups"},
    }
    scope = scope_resource(obj, {})
    assert not scope.adopt and "never adopted" in scope.adopt_refused
    in_its_realm = replace(scope, problem=None)  # its realm found and allowing it
    held = plan_client_scopes([in_its_realm], [{"id": "s1", "name": "groups", "attributes": {}}])
    assert not held.adopted and held.plan.is_empty()
    assert "a client scope is never adopted" in held.verdicts[scope.key].message


@pytest.mark.parametrize(
    "attributes",
    [
        {"kcop.dev.kind": "KeycloakClient"},  # half written
        {
            "kcop.dev.kind": "KeycloakClient",
            "kcop.dev.namespace": "team",
            "kcop.dev.name": "web",
            "kcop.dev.content-hash": "v2:not-this-format",
        },  # another operator version's
    ],
)
def test_an_object_with_any_part_of_a_marker_is_never_adopted(attributes: dict[str, str]) -> None:
    web = asking(client("home", "web"))
    scope = plan_clients([web], [{"id": "u1", "clientId": "web", "attributes": attributes}])
    assert not scope.adopted and scope.plan.is_empty()
    assert scope.verdicts[web.key].phase == "Conflict"


@given(
    held=st.lists(st.sampled_from(["a", "b", "c", "realm-management"]), unique=True),
    asks=st.lists(st.tuples(st.sampled_from(["a", "b", "c", "realm-management"]), st.booleans()), max_size=6),
)
def test_adopting_converges_and_the_next_round_is_quiet(
    held: list[str], asks: list[tuple[str, bool]]
) -> None:
    """Whatever is held unmarked and whoever asks: apply the plan, plan again, nothing left to write; no
    unmarked object is ever deleted, and none but an asked-for one is written."""
    resources = [client("home", f"r{i}", cid, age=i, adopt=adopt) for i, (cid, adopt) in enumerate(asks)]
    observed: dict[str, dict[str, Any]] = {f"u-{cid}": unmarked(cid, f"u-{cid}") for cid in held}
    scope = plan_clients(resources, list(observed.values()))
    assert not [d for d in scope.plan.deletes if d.remote_id in observed]
    by_key = {r.key: r for r in resources}
    for update in scope.plan.updates:
        assert by_key[update.key].adopt and update.remote_id in observed
        observed[update.remote_id] = in_keycloak(by_key[update.key], update.remote_id)
    for i, create in enumerate(scope.plan.creates):
        observed[f"new-{i}"] = in_keycloak(by_key[create.key], f"new-{i}")
    again = plan_clients(resources, list(observed.values()))
    assert again.plan.is_empty() and not again.adopted


# --- issue 26, finding 8: our own object, its marker lost ---------------------------------------------------


def test_our_object_whose_marker_was_removed_is_re_marked_as_its_status_recorded() -> None:
    web = client("home", "web", keycloak_id="u1")  # the status recorded the object it created
    scope = plan_clients([web], [unmarked("web", "u1")])
    assert scope.remarked == {web.key: "u1"} and scope.adopted == {web.key: "u1"}
    [update] = scope.plan.updates
    assert (update.remote_id, update.previous_hash) == ("u1", ADOPTING)
    rnd = Round()
    collect(rnd, scope, {web.key: web})
    assert any(e.reason == "MarkerRepaired" and "u1" in e.message for e in rnd.events[web.key])


@pytest.mark.parametrize(
    "attributes",
    [{}, {"kcop.dev.kind": "KeycloakClient", "kcop.dev.name": "web"}, {"kcop.dev.content-hash": "oops"}],
    ids=["gone", "half", "damaged"],
)
def test_a_damaged_marker_is_repaired_too(attributes: dict[str, Any]) -> None:
    web = client("home", "web", keycloak_id="u1")
    scope = plan_clients([web], [{**unmarked("web", "u1"), "attributes": attributes}])
    assert scope.remarked == {web.key: "u1"}


def test_never_an_object_with_another_id_nor_one_another_resource_marks() -> None:
    web = client("home", "web", keycloak_id="u1")
    scope = plan_clients([web], [unmarked("web", "u2")])
    assert not scope.remarked and scope.verdicts[web.key].phase == "Conflict"
    other = client("away", "web", keycloak_id="u9")
    held = in_keycloak(other, "u1")  # the id web's status names, but another resource's marker
    scope = plan_clients([web, other], [held])
    assert not scope.remarked and scope.plan.is_empty()
    assert scope.verdicts[web.key].phase == "Conflict" and scope.remote_ids == {other.key: "u1"}


def test_of_two_resources_naming_one_lost_object_only_the_oldest_re_marks_it() -> None:
    old = client("home", "web", keycloak_id="u1")
    young = client("away", "web", keycloak_id="u1", age=5)
    scope = plan_clients([old, young], [unmarked("web", "u1")])
    assert scope.remarked == {old.key: "u1"}
    assert scope.verdicts[young.key].phase == "Conflict"


def test_keycloaks_own_objects_are_never_re_marked_whatever_a_status_says() -> None:
    """Review finding: a status is no proof the operator made an object; Keycloak's own are never taken."""
    forged = client("home", "rm", "realm-management", keycloak_id="rm-uuid")
    scope = plan_clients([forged], [unmarked("realm-management", "rm-uuid")])
    assert not scope.remarked and scope.plan.is_empty()
    assert scope.verdicts[forged.key].phase == "Conflict"
