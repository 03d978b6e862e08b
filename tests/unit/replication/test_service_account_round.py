"""Service-account roles through whole rounds over the in-memory Kubernetes and Keycloak of
test_replication_round.py: refused without the realm's grant (the client and its Secret still written, no
revocation clock), mapped once granted, a quiet round writing nothing, a withdrawn grant's mapping removed
with an event, a grant of another namespace ignored."""

from __future__ import annotations

import copy
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest

from keycloak_operator.kernel import names
from tests.unit.replication import test_replication_round as trr
from tests.unit.replication.test_replication_round import KC_URL, World, _client, _events, make_world

Obj = dict[str, Any]
RM_ID = "rm-id"
WANTED = {"realm": ["viewer"], "clients": {"realm-management": ["view-users"]}}
GRANT = {"namespace": "team-b", "clientId": "realm-management", "roles": ["view-users"]}


class MappingAdmin(trr.FakeAdmin):
    """The fake admin, with ids on roles (as Keycloak has) and the role-mapping calls of
    shell/admin/role_mapping.py over `server.mappings`: user id -> container ("realm" or a client id) ->
    names."""

    async def create_realm(self, body: Obj) -> str:
        """As Keycloak does, a new realm comes with realm-management (unmarked) and its roles."""
        name = await super().create_realm(body)
        self.server.clients[name][RM_ID] = {"id": RM_ID, "clientId": "realm-management", "attributes": {}}
        self.server.client_roles[RM_ID] = {n: {"name": n} for n in ("view-users", "manage-users")}
        return name

    async def roles(self, realm: str) -> list[Obj]:
        composite = self.server.composite_realm  # type: ignore[attr-defined]
        return [
            {**r, "id": f"r-{r['name']}", "composite": r["name"] in composite}
            for r in await super().roles(realm)
        ]

    async def client_roles(self, realm: str, client_id: str) -> list[Obj]:
        held = self.server.composites  # type: ignore[attr-defined]
        return [
            {
                **r,
                "id": f"{client_id}-{r['name']}",
                "composite": any(held.get((client_id, r["name"]), {}).values()),
            }
            for r in await super().client_roles(realm, client_id)
        ]

    async def request(self, method: str, path: str, body: Any = None, **params: Any) -> Any:
        self._call("request", method, path)
        parts = path.split("/")
        realm = parts[2]
        store: dict[str, dict[str, set[str]]] = self.server.mappings  # type: ignore[attr-defined]
        if parts[-1] == "service-account-user":
            return {"id": f"sa-{parts[4]}"}
        if parts[-1] == "composites":
            return self._composites(method, parts[4], parts[6], body)
        user = parts[4]
        held = store.setdefault(user, {"realm": {f"default-roles-{realm}"}})
        if method == "GET":
            clients = self.server.clients[realm]
            return {
                "realmMappings": [{"id": f"r-{n}", "name": n} for n in sorted(held.get("realm", ()))],
                "clientMappings": {
                    clients[c]["clientId"]: {
                        "id": c,
                        "client": clients[c]["clientId"],
                        "mappings": [{"id": f"{c}-{n}", "name": n} for n in sorted(roles)],
                    }
                    for c, roles in held.items()
                    if c != "realm" and roles and c in clients  # a deleted client's roles go with it
                },
            }
        container = "realm" if parts[-1] == "realm" else parts[-1]
        names_ = {r["name"] for r in body}
        target = held.setdefault(container, set())
        if method == "POST":
            target |= names_
        else:
            target -= names_
        return None

    def _composites(self, method: str, client: str, role: str, body: Any) -> Any:
        held = self.server.composites.setdefault((client, role), {})  # type: ignore[attr-defined]
        if method == "GET":
            return [
                {"id": f"r-{n}" if c == "realm" else f"{c}-{n}", "name": n, "clientRole": c != "realm",
                 "containerId": "realm-id" if c == "realm" else c}
                for c, roles in sorted(held.items()) for n in sorted(roles)
            ]  # fmt: skip
        for r in body:  # ids as this fake makes them: r-<name>, or <client id>-<name>
            container = "realm" if r["id"].startswith("r-") else r["id"][: -len(r["name"]) - 1]
            target = held.setdefault(container, set())
            (target.add if method == "POST" else target.discard)(r["name"])
        return None


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> World:
    return mapping_world(monkeypatch)


def mapping_world(monkeypatch: pytest.MonkeyPatch) -> World:
    """make_world's, with MappingAdmin and team B's client `svc` declaring WANTED (not granted)."""
    w = with_role_mappings(make_world(monkeypatch), monkeypatch)
    w.replicator.revocation_grace = timedelta(hours=1)
    spec = {"serviceAccountsEnabled": True, "serviceAccountRoles": WANTED}
    w.kube.add(_client("team-b", "svc", {"name": "main", "namespace": "team-a"}, **spec))
    return w


def with_role_mappings(w: World, monkeypatch: pytest.MonkeyPatch) -> World:
    """`w`, its server answering the role-mapping calls (MappingAdmin, over stores of its own)."""
    monkeypatch.setattr(trr, "FakeAdmin", MappingAdmin)
    w.server.mappings = {}  # type: ignore[attr-defined]
    w.server.composites = {}  # type: ignore[attr-defined]
    w.server.composite_realm = set()  # type: ignore[attr-defined]  # realm roles that include others
    return w


def _held(world: World) -> dict[str, set[str]]:
    svc = next(c for c in world.server.clients["main"].values() if c["clientId"] == "svc")
    return world.server.mappings.get(f"sa-{svc['id']}", {})  # type: ignore[attr-defined,no-any-return]


def _mapping_writes(calls: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return [c[2:4] for c in calls if c[1] == "request" and c[2] != "GET"]


def _grant(world: World, *grants: Obj) -> None:
    realm = world.obj(names.REALM_KIND, "team-a", "main")
    realm["spec"]["serviceAccountGrants"] = [copy.deepcopy(g) for g in grants] or None


async def test_refused_without_a_grant_then_mapped_once_granted_then_quiet(world: World) -> None:
    await world.round(KC_URL)
    status = world.obj(names.CLIENT_KIND, "team-b", "svc")["status"]
    assert status["phase"] == "Forbidden" and "forbiddenSince" not in status
    message = status["conditions"][0]["message"]
    assert "spec.serviceAccountRoles.clients.realm-management" in message and "team-a/main" in message
    assert "disabled at" not in message  # no revocation: the client itself is allowed
    assert ("Secret", "team-b", "svc-client-secret") in {k for k in world.kube.objects}
    assert _held(world) == {"realm": {"default-roles-main"}}  # nothing added

    _grant(world, {**GRANT, "namespace": "team-c"})  # another namespace's grant counts for nothing
    await world.round(KC_URL)
    assert _held(world) == {"realm": {"default-roles-main"}}

    _grant(world, GRANT)
    _, calls, _ = await world.round(KC_URL)
    assert world.obj(names.CLIENT_KIND, "team-b", "svc")["status"]["phase"] == "Ready"
    assert _held(world) == {"realm": {"default-roles-main", "viewer"}, RM_ID: {"view-users"}}
    assert len(_mapping_writes(calls)) == 2

    _, calls, writes = await world.round(KC_URL)
    assert _mapping_writes(calls) == [] and writes == []


async def test_a_withdrawn_grant_is_removed_with_an_event_and_hand_edits_repaired(world: World) -> None:
    _grant(world, GRANT)
    await world.round(KC_URL)
    held = _held(world)
    held["realm"].discard("viewer")
    held[RM_ID].add("manage-users")  # by hand: not declared, not granted
    _, calls, writes = await world.round(KC_URL)
    assert _held(world) == {"realm": {"default-roles-main", "viewer"}, RM_ID: {"view-users"}}
    message = (
        "restored what was edited in Keycloak: serviceAccountRoles/realm-management/manage-users, "
        "serviceAccountRoles/realm/viewer"
    )
    assert (names.CLIENT_KIND, "svc", "Normal", "DriftRepaired", message) in _events(writes)

    _grant(world)
    _, calls, writes = await world.round(KC_URL)
    assert _held(world)[RM_ID] == set() and "viewer" in _held(world)["realm"]
    revoked = "removed roles no longer granted: serviceAccountRoles/realm-management/view-users"
    assert (names.CLIENT_KIND, "svc", "Warning", "ServiceAccountRoleRevoked", revoked) in _events(writes)
    assert world.obj(names.CLIENT_KIND, "team-b", "svc")["status"]["phase"] == "Forbidden"
    _, calls, writes = await world.round(KC_URL)
    assert _mapping_writes(calls) == [] and writes == []  # refused, and quiet


async def test_a_client_without_the_field_has_its_mappings_read_and_none_written(world: World) -> None:
    world.obj(names.CLIENT_KIND, "team-b", "svc")["spec"].pop("serviceAccountRoles")
    _, calls, _ = await world.round(KC_URL)
    assert [c[2] for c in calls if c[1] == "request"] == ["GET", "GET"]  # its user, its mappings
    assert _held(world) == {"realm": {"default-roles-main"}}


async def test_a_roles_composites_follow_the_same_grant_rule(world: World) -> None:
    svc = world.obj(names.CLIENT_KIND, "team-b", "svc")["spec"]
    svc["roles"] = [{"name": "auditor", "composites": {"clients": {"realm-management": ["view-users"]}}}]
    svc["serviceAccountRoles"] = {"clients": {"svc": ["auditor"]}}  # its own role: no grant needed
    await world.round(KC_URL)
    status = world.obj(names.CLIENT_KIND, "team-b", "svc")["status"]
    assert status["phase"] == "Forbidden"
    assert "spec.roles[auditor].composites.clients.realm-management" in status["conditions"][0]["message"]
    remote = next(c["id"] for c in world.server.clients["main"].values() if c["clientId"] == "svc")
    assert world.server.composites[(remote, "auditor")] == {}  # type: ignore[attr-defined]
    assert _held(world)[remote] == {"auditor"}

    _grant(world, GRANT)
    await world.round(KC_URL)
    assert world.obj(names.CLIENT_KIND, "team-b", "svc")["status"]["phase"] == "Ready"
    assert world.server.composites[(remote, "auditor")] == {RM_ID: {"view-users"}}  # type: ignore[attr-defined]
    _, calls, writes = await world.round(KC_URL)
    assert _mapping_writes(calls) == [] and writes == []

    world.server.composites[(remote, "auditor")][RM_ID].add("manage-users")  # type: ignore[attr-defined]
    _, _, writes = await world.round(KC_URL)
    repaired = "restored what was edited in Keycloak: roles/auditor/composites/realm-management/manage-users"
    assert (names.CLIENT_KIND, "svc", "Normal", "DriftRepaired", repaired) in _events(writes)
    assert world.server.composites[(remote, "auditor")] == {RM_ID: {"view-users"}}  # type: ignore[attr-defined]


async def test_a_quiet_round_lists_each_clients_roles_once(world: World) -> None:
    """The client parts, the service-account view (svc names its own role and realm-management's) and the
    composites step all need svc's roles: one listing per round serves them (shell/replication/
    realm_reads.py). A round that writes them lists them again after the write: the step still sees the
    role the parts just created, and a later hand edit is still repaired."""
    svc = world.obj(names.CLIENT_KIND, "team-b", "svc")["spec"]
    svc["roles"] = [{"name": "auditor", "composites": {"clients": {"realm-management": ["view-users"]}}}]
    svc["serviceAccountRoles"] = {"clients": {"svc": ["auditor"], "realm-management": ["view-users"]}}
    _grant(world, GRANT)
    await world.round(KC_URL)
    assert world.obj(names.CLIENT_KIND, "team-b", "svc")["status"]["phase"] == "Ready"
    remote = next(c["id"] for c in world.server.clients["main"].values() if c["clientId"] == "svc")
    assert world.server.composites[(remote, "auditor")] == {RM_ID: {"view-users"}}  # type: ignore[attr-defined]
    assert _held(world)[remote] == {"auditor"}
    await world.round(KC_URL)  # team C's intruder's revocation status settles

    _, calls, writes = await world.round(KC_URL)
    assert _mapping_writes(calls) == [] and writes == []
    listed = Counter(c[3] for c in calls if c[1] == "client_roles")  # the other clients' too
    assert listed[remote] == 1 and listed[RM_ID] == 1 and set(listed.values()) == {1}

    world.server.composites[(remote, "auditor")][RM_ID].add("manage-users")  # type: ignore[attr-defined]
    await world.round(KC_URL)
    assert world.server.composites[(remote, "auditor")] == {RM_ID: {"view-users"}}  # type: ignore[attr-defined]
