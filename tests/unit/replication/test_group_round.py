"""Groups through whole rounds over the in-memory Kubernetes and Keycloak of test_replication_round.py: a tree
written parent first after the client whose roles it maps, a quiet round writes nothing, hand edits repaired
with events, a failure stays on its group, another team's client roles out of reach, ADR 0005 (the same name
from two namespaces, one deleted, the other untouched) and a tree deleted subgroups first."""

from __future__ import annotations

from typing import Any

import kopf
import pytest

from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.kernel import names
from keycloak_operator.shell import replication_handlers as rh
from keycloak_operator.shell.admin.connection import AdminError
from keycloak_operator.shell.replication import groups as writer
from keycloak_operator.shell.runtime import ReplicationState
from tests.unit.replication import test_replication_round as trr
from tests.unit.replication.test_replication_round import (
    KC_URL,
    World,
    _client,
    _events,
    _phases,
    _resource,
    make_world,
)

KIND = names.GROUP_KIND
MAIN = {"name": "main", "namespace": "team-a"}
GROUP_WRITES = ("create_group", "update_group", "move_group", "delete_group", "map_group", "unmap_group")


def _group(ns: str, name: str, **spec: Any) -> dict[str, Any]:
    return _resource(KIND, ns, name, {"realm": MAIN, "name": name, **spec})


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> World:
    w = make_world(monkeypatch)
    w.kube.add(_client("team-a", "app", MAIN, roles=[{"name": "view"}, {"name": "edit"}]))
    w.kube.add(_group("team-a", "eng", attributes={"cost-center": ["42"]}, realmRoles=["viewer"]))
    w.kube.add(_group("team-a", "backend", parent="eng", clientRoles={"app": ["view"]}))
    return w


def _group_writes(calls: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return [c[1:] for c in calls if c[1] in GROUP_WRITES]


def _in_keycloak(world: World, path: str) -> dict[str, Any]:
    groups = world.server.groups["main"]

    def path_of(g: dict[str, Any]) -> str:
        up = g.get("parentId")
        return (path_of(groups[up]) if up else "") + "/" + g["name"]

    return next(g for g in groups.values() if path_of(g) == path)


async def test_a_tree_is_written_parent_first_after_the_client_then_a_quiet_round_writes_nothing(
    world: World,
) -> None:
    _, calls, writes = await world.round(KC_URL)
    ops = [c[1] for c in calls]
    assert ops.index("create_client") < ops.index("create_group")
    eng, backend = _in_keycloak(world, "/eng"), _in_keycloak(world, "/eng/backend")
    written = _group_writes(calls)
    assert written[:2] == [("create_group", "main", "eng"), ("create_group", "main", "backend")]
    assert sorted(written[2:]) == sorted(
        [("map_group", "main", eng["id"], ["viewer"]), ("map_group", "main", backend["id"], ["view"])]
    )
    assert eng["attributes"]["cost-center"] == ["42"] and eng["attributes"]["kcop.dev.kind"] == [KIND]
    assert backend["parentId"] == eng["id"] and backend["clientRoles"] == {"app": ["view"]}
    assert _phases(writes)["team-a/eng"] == "Ready" and _phases(writes)["team-a/backend"] == "Ready"
    assert (KIND, "backend", "Normal", "Created", "created in Keycloak") in _events(writes)
    assert world.obj(KIND, "team-a", "backend")["status"]["keycloakId"] == backend["id"]

    _, calls, writes = await world.round(KC_URL)
    assert _group_writes(calls) == [] and writes == []


async def test_hand_edits_of_attributes_and_role_mappings_are_repaired_with_events(world: World) -> None:
    await world.round(KC_URL)
    eng, backend = _in_keycloak(world, "/eng"), _in_keycloak(world, "/eng/backend")
    eng["attributes"] = {**eng["attributes"], "cost-center": ["7"], "added": ["x"]}
    eng["realmRoles"] = ["viewer", "admin"]  # a mapping added by hand: the declared set is exact
    backend["parentId"] = None  # moved to the top by hand
    _, calls, writes = await world.round(KC_URL)
    assert ("unmap_group", "main", eng["id"], ["admin"]) in _group_writes(calls)
    assert ("move_group", "main", backend["id"], eng["id"]) in _group_writes(calls)
    assert eng["attributes"]["cost-center"] == ["42"] and "added" not in eng["attributes"]
    assert eng["realmRoles"] == ["viewer"] and backend["parentId"] == eng["id"]
    repaired = [e for e in _events(writes) if e[3] == "DriftRepaired"]
    assert {e[1] for e in repaired} == {"eng", "backend"}
    assert any("attributes.added" in e[4] for e in repaired)
    assert any("realmRoles/admin" in e[4] for e in repaired)
    _, calls, writes = await world.round(KC_URL)
    assert _group_writes(calls) == [] and writes == []


async def test_another_teams_client_roles_are_out_of_reach_and_nothing_is_written(world: World) -> None:
    world.kube.add(_group("team-b", "spies", clientRoles={"app": ["view"]}))
    world.kube.add(_group("team-a", "ghosts", realmRoles=["nonexistent"]))
    _, calls, writes = await world.round(KC_URL)
    status = world.obj(KIND, "team-b", "spies")["status"]
    assert status["phase"] == "Forbidden" and "spec.clientRoles.app" in status["conditions"][0]["message"]
    assert "forbiddenSince" not in status  # no revocation clock: the namespace is still allowed
    ghosts = world.obj(KIND, "team-a", "ghosts")["status"]
    assert ghosts["phase"] == "Pending" and "spec.realmRoles" in ghosts["conditions"][0]["message"]
    assert all(c[2] not in ("spies", "ghosts") for c in _group_writes(calls))
    assert _phases(writes)["team-a/backend"] == "Ready"  # the others go on


async def test_a_failure_stays_on_its_group(world: World) -> None:
    world.kube.add(_group("team-a", "ops"))
    world.server.failing.add("ops")
    delay, _, writes = await world.round(KC_URL)
    assert _phases(writes)["team-a/ops"] == "Error" and _phases(writes)["team-a/eng"] == "Ready"
    assert delay is not None  # retried soon


async def test_seed_003_the_same_name_in_two_namespaces_one_deleted_the_other_untouched(world: World) -> None:
    world.kube.add(_group("team-b", "eng"))  # younger than team-a's: a Conflict
    await world.round(KC_URL)
    assert world.obj(KIND, "team-b", "eng")["status"]["phase"] == "Conflict"
    held = dict(_in_keycloak(world, "/eng"))
    world.delete(KIND, "team-b", "eng")
    _, calls, _ = await world.round(KC_URL)
    assert _group_writes(calls) == [] and (KIND, "team-b", "eng") not in world.kube.objects
    assert _in_keycloak(world, "/eng") == held


async def test_deleting_the_tree_removes_subgroups_first_and_a_parent_waits_for_declared_ones(
    world: World,
) -> None:
    await world.round(KC_URL)
    eng, backend = _in_keycloak(world, "/eng"), _in_keycloak(world, "/eng/backend")
    world.delete(KIND, "team-a", "eng")  # its subgroup is still declared: it waits, whole
    _, calls, _ = await world.round(KC_URL)
    assert _group_writes(calls) == []
    status = world.obj(KIND, "team-a", "eng")["status"]
    assert status["phase"] == "Deleting" and "backend" in status["conditions"][0]["message"]
    world.delete(KIND, "team-a", "backend")
    _, calls, _ = await world.round(KC_URL)
    assert _group_writes(calls) == [
        ("delete_group", "main", backend["id"]),
        ("delete_group", "main", eng["id"]),
    ]
    assert world.server.groups["main"] == {}
    assert not any(k[0] == KIND for k in world.kube.objects)


class _Lane:
    def __init__(self) -> None:
        self.queued: list[str] = []

    def add(self, url: str) -> None:
        self.queued.append(url)


async def test_a_group_event_queues_its_realms_server(monkeypatch: pytest.MonkeyPatch) -> None:
    lane = _Lane()
    monkeypatch.setattr(rh.runtime, "replication", ReplicationState())
    rh.runtime.replication.own = rh.runtime.replication.external = lane  # type: ignore[assignment]
    rh.runtime.replication.servers[ObjectKey(names.REALM_KIND, "team-a", "main")] = KC_URL
    await rh.ON_EVENT[names.GROUP_KIND](event={"type": "ADDED"}, body=kopf.Body(_group("team-a", "eng")))
    assert lane.queued == [KC_URL]


async def test_a_realm_without_any_keycloakgroup_never_reads_its_group_tree(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    w = make_world(monkeypatch)
    w.kube.add(_client("team-a", "app", MAIN))
    read: list[str] = []

    async def huge(self: Any, realm: str) -> list[Any]:  # a realm of LDAP-synced groups, say
        read.append(realm)
        raise AdminError(0, f"{realm}: more than 20000 groups")

    monkeypatch.setattr(trr.FakeGroups, "groups", huge)
    _, _, writes = await w.round(KC_URL)
    assert read == [] and _phases(writes)["team-a/app"] == "Ready"


@pytest.mark.parametrize("failing", ["groups", "client_roles"])
async def test_a_failed_read_is_an_error_on_the_groups_only_never_on_the_realm_or_its_clients(
    world: World, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    world.kube.add(_client("team-b", "other", MAIN))
    await world.round(KC_URL)

    async def boom(self: Any, *args: Any) -> list[Any]:
        raise AdminError(503, "Service Unavailable")

    if failing == "groups":
        monkeypatch.setattr(trr.FakeGroups, "groups", boom)
    else:  # a client's roles, read to know what the groups may map
        monkeypatch.setattr(writer.Lookup, "client_roles", boom)
    world.obj(KIND, "team-a", "backend")["spec"]["clientRoles"] = {"app": ["edit"]}  # makes a read needed
    _, calls, writes = await world.round(KC_URL)
    phases = _phases(writes)
    assert phases["team-a/eng"] == "Error" and phases["team-a/backend"] == "Error"
    status = world.obj(KIND, "team-a", "eng")["status"]
    assert any(c.get("reason") == "ReadFailed" for c in status.get("conditions", []))
    assert _group_writes(calls) == []
    assert world.obj(names.CLIENT_KIND, "team-b", "other")["status"]["phase"] == "Ready"
    assert world.obj(names.REALM_KIND, "team-a", "main")["status"]["phase"] == "Ready"


async def test_a_composite_realm_role_needs_the_realm_owners_grant_and_is_removed_when_it_goes(
    world: World,
) -> None:
    """Issue 26, finding 2: a group holding a composite realm role hands it to whoever joins it (an identity
    provider's group mapper, say). Refused without a grant; with it, mapped; the grant withdrawn, removed
    though the group is then Forbidden and its declared mappings are not written."""
    await world.round(KC_URL)
    world.server.roles["main"]["admin"]["composite"] = True  # it includes others: the realm owner's choice
    world.kube.add(_group("team-a", "admins", realmRoles=["admin"]))
    await world.round(KC_URL)
    status = world.obj(KIND, "team-a", "admins")["status"]
    assert status["phase"] == "Forbidden"
    assert "spec.realmRoles[admin]: composite realm role 'admin'" in status["conditions"][0]["message"]
    assert "{namespace: team-a, roles: [admin]}" in status["conditions"][0]["message"]
    with pytest.raises(StopIteration):  # nothing was written for it
        _in_keycloak(world, "/admins")

    grants = [{"namespace": "team-a", "roles": ["admin"]}]
    world.obj(names.REALM_KIND, "team-a", "main")["spec"]["serviceAccountGrants"] = grants
    await world.round(KC_URL)
    assert world.obj(KIND, "team-a", "admins")["status"]["phase"] == "Ready"
    assert _in_keycloak(world, "/admins")["realmRoles"] == ["admin"]

    world.obj(names.REALM_KIND, "team-a", "main")["spec"]["serviceAccountGrants"] = None
    _, _, writes = await world.round(KC_URL)
    assert world.obj(KIND, "team-a", "admins")["status"]["phase"] == "Forbidden"
    assert _in_keycloak(world, "/admins").get("realmRoles", []) == []
    assert any(e[3] == "RoleMappingRevoked" and "realmRoles/admin" in e[4] for e in _events(writes))
    _, _, writes = await world.round(KC_URL)
    assert writes == []


async def test_another_teams_client_role_needs_the_realm_owners_grant_and_is_removed_when_it_goes(
    world: World,
) -> None:
    """Groups' client roles ask the token authority: team-b's group may map team-a's `app` role only with
    the realm owner's grant naming it; the grant withdrawn, the mapping goes though the group is Forbidden,
    and the group's own client's role stays."""
    world.kube.add(_client("team-b", "own", MAIN, roles=[{"name": "use"}]))
    world.kube.add(_group("team-b", "guests", clientRoles={"app": ["view"], "own": ["use"]}))
    await world.round(KC_URL)
    message = world.obj(KIND, "team-b", "guests")["status"]["conditions"][0]["message"]
    assert world.obj(KIND, "team-b", "guests")["status"]["phase"] == "Forbidden"
    assert "spec.clientRoles.app: role 'view' of client 'app' not granted to namespace team-b" in message
    assert "{namespace: team-b, clientId: app, roles: [view]}" in message

    grants = [{"namespace": "team-b", "clientId": "app", "roles": ["view"]}]
    world.obj(names.REALM_KIND, "team-a", "main")["spec"]["serviceAccountGrants"] = grants
    await world.round(KC_URL)
    assert world.obj(KIND, "team-b", "guests")["status"]["phase"] == "Ready"
    assert _in_keycloak(world, "/guests")["clientRoles"] == {"app": ["view"], "own": ["use"]}

    world.obj(names.REALM_KIND, "team-a", "main")["spec"]["serviceAccountGrants"] = None
    _, _, writes = await world.round(KC_URL)
    assert world.obj(KIND, "team-b", "guests")["status"]["phase"] == "Forbidden"
    assert _in_keycloak(world, "/guests")["clientRoles"] == {"own": ["use"]}
    assert any(e[3] == "RoleMappingRevoked" and "clientRoles.app/view" in e[4] for e in _events(writes))
    _, _, writes = await world.round(KC_URL)
    assert writes == []


async def test_a_group_whose_attributes_were_cleared_by_hand_is_re_marked_not_held_in_conflict(
    world: World,
) -> None:
    """Issue 26, finding 8: clearing a group's attributes in the console removes the operator's marker too.
    The group its status names is taken back (marker and attributes restored, with a Warning), never held
    as `Conflict` for ever."""
    await world.round(KC_URL)
    eng = _in_keycloak(world, "/eng")
    assert world.obj(KIND, "team-a", "eng")["status"]["keycloakId"] == eng["id"]
    eng["attributes"] = {}
    _, _, writes = await world.round(KC_URL)
    assert world.obj(KIND, "team-a", "eng")["status"]["phase"] == "Ready"
    restored = _in_keycloak(world, "/eng")
    assert restored["id"] == eng["id"] and restored["attributes"]["cost-center"] == ["42"]
    assert restored["attributes"]["kcop.dev.name"] == ["eng"]
    assert any(e[3] == "MarkerRepaired" and eng["id"] in e[4] for e in _events(writes))
    _, _, writes = await world.round(KC_URL)
    assert writes == []
