"""The realm owner's grant rule through whole rounds (in-memory Keycloak of test_service_account_round.py),
for every client carrying a namespace's marker, whatever it declares and whatever its verdict: a withdrawn
grant's mapping or composite goes though the field was dropped, the client is Pending, or it is preserved and
released; composites only on roles the operator made; an adopted or renamed client keeps its own roles; one
unreadable client is that client's problem; `uma_protection` and composite realm roles."""

from __future__ import annotations

from typing import Any

import pytest

from keycloak_operator.core.replication import ObjectKey, marked
from keycloak_operator.kernel import names
from keycloak_operator.shell.admin.connection import AdminError
from tests.unit.replication.test_replication_round import KC_URL, World, _client, _events
from tests.unit.replication.test_service_account_round import (
    GRANT,
    RM_ID,
    MappingAdmin,
    _grant,
    _held,
    mapping_world,
)

REVOKED = "ServiceAccountRoleRevoked"


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> World:
    return mapping_world(monkeypatch)


def _remote(world: World, cid: str) -> str:
    return next(c["id"] for c in world.server.clients["main"].values() if c["clientId"] == cid)


def _svc(world: World) -> dict[str, Any]:
    return world.obj(names.CLIENT_KIND, "team-b", "svc")


def _composites(world: World) -> dict[tuple[str, str], dict[str, set[str]]]:
    return world.server.composites  # type: ignore[attr-defined,no-any-return]


async def test_a_withdrawn_grant_is_removed_though_the_field_was_dropped(world: World) -> None:
    _grant(world, GRANT)
    await world.round(KC_URL)
    assert _held(world)[RM_ID] == {"view-users"}
    _svc(world)["spec"].pop("serviceAccountRoles")  # absent: not managed, but still under the rule
    _, _, writes = await world.round(KC_URL)
    assert _held(world)[RM_ID] == {"view-users"}  # granted still: left as it is
    assert not [e for e in _events(writes) if e[3] == REVOKED]
    _grant(world)
    _, _, writes = await world.round(KC_URL)
    assert _held(world)[RM_ID] == set() and "viewer" in _held(world)["realm"]  # the realm role stays
    message = "removed roles no longer granted: serviceAccountRoles/realm-management/view-users"
    assert (names.CLIENT_KIND, "svc", "Warning", REVOKED, message) in _events(writes)
    assert _svc(world)["status"]["phase"] == "Ready"  # it declares nothing refused


async def test_a_withdrawn_grant_is_removed_from_a_pending_client(world: World) -> None:
    _grant(world, GRANT)
    await world.round(KC_URL)
    _svc(world)["spec"]["defaultClientScopes"] = ["no-such-scope"]
    _grant(world)
    await world.round(KC_URL)
    assert _svc(world)["status"]["phase"] == "Pending"
    assert _held(world)[RM_ID] == set() and "viewer" in _held(world)["realm"]


async def test_a_withdrawn_grant_is_removed_from_a_forbidden_namespaces_client(world: World) -> None:
    _grant(world, GRANT)
    await world.round(KC_URL)
    realm = world.obj(names.REALM_KIND, "team-a", "main")
    realm["spec"]["clientNamespaces"] = []
    _grant(world)
    await world.round(KC_URL)
    assert _svc(world)["status"]["phase"] == "Forbidden"
    assert _held(world)[RM_ID] == set()


async def test_a_withdrawn_composite_is_removed_though_composites_were_dropped(world: World) -> None:
    svc = _svc(world)["spec"]
    svc["roles"] = [{"name": "auditor", "composites": {"clients": {"realm-management": ["view-users"]}}}]
    _grant(world, GRANT)
    await world.round(KC_URL)
    remote = _remote(world, "svc")
    assert _composites(world)[(remote, "auditor")] == {RM_ID: {"view-users"}}
    svc["roles"] = [{"name": "auditor"}]
    _grant(world)
    _, _, writes = await world.round(KC_URL)
    assert _composites(world)[(remote, "auditor")] == {RM_ID: set()}
    message = next(e[4] for e in _events(writes) if e[1] == "svc" and e[3] == REVOKED)
    assert message == (
        "removed roles no longer granted: roles/auditor/composites/realm-management/view-users, "
        "serviceAccountRoles/realm-management/view-users"
    )


async def test_a_preserved_client_is_stripped_of_roles_needing_a_grant_before_release(world: World) -> None:
    svc = _svc(world)
    svc["spec"]["roles"] = [
        {"name": "auditor", "composites": {"clients": {"realm-management": ["view-users"]}}}
    ]
    _grant(world, GRANT)
    await world.round(KC_URL)
    remote = _remote(world, "svc")
    svc["metadata"]["annotations"] = {names.ANNOTATION_PRESERVE: "true"}
    world.delete(names.CLIENT_KIND, "team-b", "svc")
    await world.round(KC_URL)
    assert remote in world.server.clients["main"]  # left in Keycloak, unmarked
    assert world.server.mappings[f"sa-{remote}"] == {  # type: ignore[attr-defined]
        "realm": {"default-roles-main", "viewer"},
        RM_ID: set(),
    }
    assert _composites(world)[(remote, "auditor")] == {RM_ID: set()}


async def test_composites_are_never_written_onto_a_role_made_by_hand(world: World) -> None:
    _grant(world, GRANT)
    await world.round(KC_URL)
    remote = _remote(world, "svc")
    world.server.client_roles.setdefault(remote, {})["hand"] = {"name": "hand"}  # no owner attribute
    _composites(world)[(remote, "hand")] = {"realm": {"viewer"}}
    _svc(world)["spec"]["roles"] = [{"name": "hand", "composites": {"realm": ["admin"]}}]
    await world.round(KC_URL)
    status = _svc(world)["status"]
    assert status["phase"] == "Conflict" and "role hand" in status["conditions"][0]["message"]
    assert _composites(world)[(remote, "hand")] == {"realm": {"viewer"}}


@pytest.mark.parametrize("adoption_fails", [False, True])
async def test_an_adopted_client_keeps_its_own_roles_mapped(world: World, adoption_fails: bool) -> None:
    await world.round(KC_URL)
    if adoption_fails:  # still unmarked: no one's, its mappings left alone
        world.server.failing.add("legacy")
    world.server.clients["main"]["hand-1"] = {
        "id": "hand-1",
        "clientId": "legacy",
        "attributes": {},
        "serviceAccountsEnabled": True,
    }
    world.server.client_roles["hand-1"] = {"x": {"name": "x"}}
    world.server.mappings["sa-hand-1"] = {"realm": {"default-roles-main"}, "hand-1": {"x"}}  # type: ignore[attr-defined]
    spec = {"serviceAccountsEnabled": True, "serviceAccountRoles": {"clients": {"legacy": ["x"]}}}
    obj = _client("team-a", "legacy", {"name": "main", "namespace": "team-a"}, **spec)
    obj["metadata"]["annotations"] = {names.ANNOTATION_ADOPT: "true"}
    world.kube.add(obj)
    _, _, writes = await world.round(KC_URL)
    assert world.server.mappings["sa-hand-1"]["hand-1"] == {"x"}  # type: ignore[attr-defined]
    phase = world.obj(names.CLIENT_KIND, "team-a", "legacy")["status"]["phase"]
    assert phase == ("Error" if adoption_fails else "Ready")
    assert not [e for e in _events(writes) if e[3] == REVOKED]


async def test_a_renamed_client_keeps_its_own_roles_mapped(world: World) -> None:
    svc = _svc(world)["spec"]
    svc["roles"] = [{"name": "x"}]
    svc["serviceAccountRoles"] = {"clients": {"svc": ["x"]}}
    await world.round(KC_URL)
    remote = _remote(world, "svc")
    svc["clientId"] = "svc2"
    svc["serviceAccountRoles"] = {"clients": {"svc2": ["x"]}}
    _, _, writes = await world.round(KC_URL)
    assert world.server.mappings[f"sa-{remote}"][remote] == {"x"}  # type: ignore[attr-defined]
    assert _svc(world)["status"]["phase"] == "Ready"
    assert not [e for e in _events(writes) if e[3] == REVOKED]


async def test_a_client_deleted_in_the_round_its_role_is_named_fails_no_one_else(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    main = {"name": "main", "namespace": "team-a"}
    world.kube.add(_client("team-b", "foo", main, roles=[{"name": "r"}]))
    _svc(world)["spec"]["serviceAccountRoles"] = {"clients": {"foo": ["r"]}}
    await world.round(KC_URL)
    assert _svc(world)["status"]["phase"] == "Ready"
    inner = MappingAdmin.client_roles

    async def client_roles(self: Any, realm: str, client_id: str) -> list[Any]:
        if client_id not in self.server.clients[realm]:
            raise AdminError(404, f"GET clients/{client_id}/roles: 404 Could not find client")
        return await inner(self, realm, client_id)

    monkeypatch.setattr(MappingAdmin, "client_roles", client_roles)
    world.kube.add(_client("team-b", "newone", main))  # created this round: its Secret is due
    world.delete(names.CLIENT_KIND, "team-b", "foo")
    await world.round(KC_URL)
    assert world.obj(names.REALM_KIND, "team-a", "main")["status"]["phase"] == "Ready"
    assert world.obj(names.CLIENT_KIND, "team-a", "web")["status"]["phase"] == "Ready"
    assert ("Secret", "team-b", "newone-client-secret") in world.kube.objects
    status = _svc(world)["status"]
    # foo is gone: no namespace owns a client of that name any more, so mapping its role needs a grant.
    assert status["phase"] == "Forbidden" and "clients.foo" in status["conditions"][0]["message"]


async def test_uma_protection_of_the_clients_own_client_is_kept(world: World) -> None:
    _grant(world, GRANT)
    await world.round(KC_URL)
    remote = _remote(world, "svc")
    world.server.client_roles.setdefault(remote, {})["uma_protection"] = {"name": "uma_protection"}
    _held(world)[remote] = {"uma_protection"}  # Keycloak maps it with authorization services on
    _, calls, _ = await world.round(KC_URL)
    assert _held(world)[remote] == {"uma_protection"}
    assert [c for c in calls if c[1] == "request" and c[2] != "GET"] == []


async def test_a_composite_realm_role_needs_a_grant(world: World) -> None:
    world.server.composite_realm.add("admin")  # type: ignore[attr-defined]
    _svc(world)["spec"]["serviceAccountRoles"] = {"realm": ["admin"]}
    await world.round(KC_URL)
    status = _svc(world)["status"]
    assert status["phase"] == "Forbidden"
    assert "spec.serviceAccountRoles.realm: composite realm roles admin" in status["conditions"][0]["message"]
    assert "{namespace: team-b, roles: [admin]}" in status["conditions"][0]["message"]
    assert _held(world) == {"realm": {"default-roles-main"}}
    _grant(world, {"namespace": "team-b", "roles": ["admin"]})
    await world.round(KC_URL)
    assert _svc(world)["status"]["phase"] == "Ready" and "admin" in _held(world)["realm"]
    _grant(world)
    await world.round(KC_URL)
    assert "admin" not in _held(world)["realm"]


async def test_a_pending_client_not_yet_a_service_account_is_not_asked_for_one(world: World) -> None:
    main = {"name": "main", "namespace": "team-a"}
    spec = {"serviceAccountsEnabled": True, "defaultClientScopes": ["no-such-scope"]}
    world.kube.add(_client("team-b", "late", main, **spec))
    world.obj(names.CLIENT_KIND, "team-b", "svc")["spec"].pop("serviceAccountRoles")
    await world.round(KC_URL)
    # Written before without a service account; now Pending, so the flag never reached Keycloak.
    key = ObjectKey(names.CLIENT_KIND, "team-b", "late")
    late = marked({"clientId": "late", "serviceAccountsEnabled": False}, key)
    world.server.clients["main"]["late-id"] = {"id": "late-id", **late}
    delay, calls, writes = await world.round(KC_URL)
    assert world.obj(names.CLIENT_KIND, "team-b", "late")["status"]["phase"] == "Pending"
    assert not [c for c in calls if c[1] == "request" and "late-id" in c[3]]
    assert not [e for e in _events(writes) if e[3] == "WriteFailed"] and delay is None
