"""Each replicated kind's pure module: the bodies its writer sends (realm, client, realm roles), the events
the roles make, and the Secret a confidential client's secret goes to."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from keycloak_operator.core.replication import (
    Create,
    ObjectKey,
    Update,
    client_secret,
    content_hash,
    marked,
    read_marker,
)
from keycloak_operator.core.replication import client as client_kind
from keycloak_operator.core.replication import realm as realm_kind
from keycloak_operator.core.replication import roles as role_kind
from keycloak_operator.core.replication.marker import MARKER_ATTRIBUTES, marker_attributes
from keycloak_operator.core.replication.sync import Resource, Verdict
from keycloak_operator.kernel import names
from keycloak_operator.kernel.events import Event
from keycloak_operator.models.client import KeycloakClientSpec
from keycloak_operator.models.realm import KeycloakRealmSpec

T0 = datetime(2026, 1, 1, tzinfo=UTC)
REALM_KEY = ObjectKey(names.REALM_KIND, "team", "main")
CLIENT_KEY = ObjectKey(names.CLIENT_KIND, "team", "web")
ROLES = [{"name": "viewer", "description": "reads"}, {"name": "admin"}]


def realm_content(**spec: Any) -> dict[str, Any]:
    model = KeycloakRealmSpec.model_validate({"server": {"keycloak": {"name": "kc"}}, **spec})
    return realm_kind.realm_content(model, "main")


def client_content(**spec: Any) -> dict[str, Any]:
    return client_kind.client_content(
        KeycloakClientSpec.model_validate({"realm": {"name": "main"}, "clientId": "web", **spec})
    )


# --- realm --------------------------------------------------------------------------------------------------


def test_a_new_realm_carries_its_roles_each_marked_as_the_resources() -> None:
    content = realm_content(roles=ROLES)
    body = realm_kind.create_body(Create(REALM_KEY, content, content_hash(content)))
    marker = read_marker(body["attributes"])
    assert marker is not None and marker.key == REALM_KEY and marker.content_hash == content_hash(content)
    owner = {names.ROLE_OWNER_ATTRIBUTE: ["team/main"]}
    assert body["roles"]["realm"] == [
        {"name": "admin", "description": "", "attributes": owner},
        {"name": "viewer", "description": "reads", "attributes": owner},
    ]
    assert realm_kind.remote_id(Create(REALM_KEY, content, content_hash(content))) == "main"


def test_a_realm_update_leaves_roles_to_their_own_endpoints_and_follows_a_rename() -> None:
    content = realm_content(roles=ROLES, realmName="renamed")
    op = Update(REALM_KEY, "main", content, content_hash(content), "0" * 64)
    body = realm_kind.update_body(op)
    assert "roles" not in body and body["realm"] == "renamed"
    assert read_marker(body["attributes"]) is not None
    assert realm_kind.remote_id(op) == "renamed"


def test_a_realm_update_sends_back_the_attributes_keycloak_lists_that_are_not_ours() -> None:
    # Keycloak's realm PUT replaces every attribute with those sent: an update that sent the marker alone
    # would remove the Frontend URL (and every other realm setting stored as an attribute) set by hand.
    content = realm_content(roles=ROLES)
    op = Update(REALM_KEY, "main", content, content_hash(content), "0" * 64)
    stale = {"kcop.dev.kind": "Old", "kcop.dev.format": "2", "kcop.dev.content-hash": "0" * 64}
    listed = {
        "realm": "main",
        "attributes": {"frontendUrl": "https://sso.example", "acr.loa.map": "{}", **stale},
    }
    attributes = realm_kind.update_body(op, listed=listed)["attributes"]
    assert attributes["frontendUrl"] == "https://sso.example" and attributes["acr.loa.map"] == "{}"
    marker = read_marker(attributes)
    assert marker is not None and marker.key == REALM_KEY and marker.content_hash == content_hash(content)
    assert "kcop.dev.format" not in attributes  # the record is migrations.stamped's to write


def test_releasing_a_realm_keeps_its_other_attributes_and_drops_every_one_of_ours() -> None:
    listed = {"realm": "main", "attributes": {"frontendUrl": "https://sso.example", "kcop.dev.format": "2"}}
    listed["attributes"] |= marker_attributes(REALM_KEY, "0" * 64)
    assert realm_kind.release_body(listed) == {"attributes": {"frontendUrl": "https://sso.example"}}


def test_releasing_a_realm_empties_its_marker_and_disabling_touches_only_enabled() -> None:
    released = realm_kind.release_body()
    assert read_marker(released["attributes"]) is None
    assert set(released["attributes"]) == set(MARKER_ATTRIBUTES)
    assert realm_kind.disable_body() == {"enabled": False}
    assert realm_kind.release_body() is not released  # a fresh body each time: a caller may change it


def test_a_realm_put_of_other_fields_sends_the_listed_attributes_back_ours_included() -> None:
    # Keycloak 26.7.3 resets CIBA and PAR settings on a realm PUT whose attributes do not name them.
    ours = marker_attributes(REALM_KEY, "0" * 64)
    listed = {"realm": "r", "attributes": {"cibaBackchannelTokenDeliveryMode": "ping", **ours}}
    kept = {"cibaBackchannelTokenDeliveryMode": "ping", **ours}
    assert realm_kind.disable_body(listed) == {"enabled": False, "attributes": kept}
    bindings = {"directGrantFlow": "team direct"}
    assert realm_kind.keeping_attributes(bindings, listed) == {**bindings, "attributes": kept}
    assert realm_kind.keeping_attributes(bindings, None) == bindings  # nothing listed: nothing guessed
    assert realm_kind.keeping_attributes(bindings, {"realm": "r"}) == bindings  # never an empty map


def test_the_realm_drift_check_leaves_out_its_roles() -> None:
    content = realm_content(roles=ROLES)
    observed = {**realm_kind.realm_write(content), "roles": {"realm": []}}
    scope = realm_kind.plan_realms(
        [Resource(REALM_KEY, "main", content, T0)], [], [{**observed, **_marked(content, REALM_KEY)}]
    )
    assert scope.drift == {} and scope.plan.is_empty()


def _marked(content: dict[str, Any], key: ObjectKey) -> dict[str, Any]:
    return {"attributes": marked(content, key)["attributes"]}


# --- client -------------------------------------------------------------------------------------------------


def test_a_client_create_is_marked_and_an_update_names_the_id_it_replaces() -> None:
    content = client_content()
    created = client_kind.upsert_body(Create(CLIENT_KEY, content, content_hash(content)))
    assert "id" not in created
    marker = read_marker(created["attributes"])
    assert marker is not None and marker.key == CLIENT_KEY
    updated = client_kind.upsert_body(Update(CLIENT_KEY, "u1", content, content_hash(content), "0" * 64))
    assert updated == {**created, "id": "u1"}


current_clients = st.fixed_dictionaries(
    {"id": st.text(min_size=1), "clientId": st.text(min_size=1), "enabled": st.booleans()},
    optional={
        "secret": st.text(),
        "access": st.dictionaries(st.text(), st.booleans()),
        "attributes": st.dictionaries(st.text(), st.text()),
        "redirectUris": st.lists(st.text()),
    },
)


@given(current_clients)
def test_releasing_a_client_keeps_everything_but_its_marker(current: dict[str, Any]) -> None:
    body = client_kind.release_body(current)
    assert read_marker(body["attributes"]) is None
    assert {k: v for k, v in body.items() if k != "attributes"} == {
        k: v for k, v in current.items() if k != "attributes"
    }
    kept = {k: v for k, v in (current.get("attributes") or {}).items() if k not in MARKER_ATTRIBUTES}
    assert {k: v for k, v in body["attributes"].items() if k not in MARKER_ATTRIBUTES} == kept


@given(current_clients)
def test_disabling_a_client_keeps_it_whole_but_for_what_a_put_could_damage(current: dict[str, Any]) -> None:
    body = client_kind.disable_body(current)
    assert body["enabled"] is False
    assert "secret" not in body and "access" not in body
    ignored = ("enabled", "secret", "access")
    assert {k: v for k, v in body.items() if k not in ignored} == {
        k: v for k, v in current.items() if k not in ignored
    }


# --- the client's Secret ------------------------------------------------------------------------------------

CLIENT_OBJ = {"metadata": {"namespace": "team", "name": "web", "uid": "uid-web"}, "spec": {}}


def secret(uid: str = "uid-web", remote: str = "u1") -> dict[str, Any]:
    return {
        "metadata": {
            "ownerReferences": [{"uid": uid}],
            "annotations": {names.ANNOTATION_CLIENT_ID: remote},
        },
        "data": {},
    }


def test_a_secret_is_looked_at_only_for_a_ready_client_in_keycloak() -> None:
    c = Resource(CLIENT_KEY, "web", {}, T0)
    assert client_secret.secret_due(c, "u1", None)
    assert client_secret.secret_due(c, "u1", Verdict("Ready", "InSync"))
    assert not client_secret.secret_due(c, None, None)
    assert not client_secret.secret_due(c, "u1", Verdict("Conflict", "Conflict"))
    assert not client_secret.secret_due(Resource(CLIENT_KEY, "web", {}, T0, deleting=True), "u1", None)


def test_the_secret_is_read_again_only_when_missing_stale_or_just_written() -> None:
    step = client_secret.secret_step
    assert step(CLIENT_OBJ, "web-client-secret", None, "u1", False) == "read"
    assert step(CLIENT_OBJ, "web-client-secret", secret(), "u1", False) == "keep"
    assert step(CLIENT_OBJ, "web-client-secret", secret(), "u1", True) == "read"
    assert step(CLIENT_OBJ, "web-client-secret", secret(remote="u0"), "u1", False) == "read"
    assert step(CLIENT_OBJ, "web-client-secret", secret(uid="someone"), "u1", False) == Verdict(
        "Error", "SecretNotOwned", "Secret web-client-secret exists and is not owned by this client"
    )


@given(st.text(), st.text())
def test_the_secret_holds_the_client_id_and_secret_and_is_owned_by_the_client(
    client_id: str, value: str
) -> None:
    body = client_secret.secret_body(CLIENT_OBJ, "web-client-secret", client_id, value, "u1")
    assert base64.b64decode(body["data"]["clientId"]).decode() == client_id
    assert base64.b64decode(body["data"]["clientSecret"]).decode() == value
    meta = body["metadata"]
    assert (meta["namespace"], meta["name"]) == ("team", "web-client-secret")
    assert meta["annotations"] == {names.ANNOTATION_CLIENT_ID: "u1"}
    [owner] = meta["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        names.CLIENT_KIND,
        "web",
        "uid-web",
        True,
    )
    assert client_secret.secret_written("web-client-secret") == Event(
        "Normal", "SecretWritten", "client secret written to Secret web-client-secret"
    )


# --- realm roles --------------------------------------------------------------------------------------------


def role(name: str, description: str = "", owner: str | None = "team/main") -> dict[str, Any]:
    attributes = {names.ROLE_OWNER_ATTRIBUTE: [owner]} if owner else {}
    return {"name": name, "description": description, "attributes": attributes}


def test_role_writes_go_creates_then_updates_then_deletes_each_marked() -> None:
    declared = {"new": "n", "changed": "after", "same": ""}
    observed = [role("changed", "before"), role("same"), role("gone"), role("offline_access", owner=None)]
    plan = role_kind.plan_roles({**declared, "offline_access": ""}, observed, "team/main")
    writes = role_kind.role_writes(plan, "team/main")
    assert [(w.operation, w.name) for w in writes] == [
        ("create", "new"),
        ("update", "changed"),
        ("delete", "gone"),
    ]
    assert writes[0].body == role("new", "n") and writes[2].body is None
    assert role_kind.conflict_event(plan) == Event(
        "Warning", "RoleConflict", "roles not created by the operator: offline_access"
    )
    assert role_kind.synced_event(plan) == Event(
        "Normal", "RolesSynced", "realm roles written: new, changed, gone"
    )


def test_roles_in_step_write_and_say_nothing() -> None:
    plan = role_kind.plan_roles({"same": ""}, [role("same")], "team/main")
    assert role_kind.role_writes(plan, "team/main") == []
    assert role_kind.conflict_event(plan) is None and role_kind.synced_event(plan) is None


def test_declared_roles_are_read_from_the_realm_content() -> None:
    assert role_kind.declared_roles(realm_content(roles=ROLES)) == {"admin": "", "viewer": "reads"}
