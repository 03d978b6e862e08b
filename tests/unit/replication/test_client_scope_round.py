"""Client scopes through whole rounds over the in-memory Kubernetes and Keycloak of test_replication_round.py:
written before the clients that attach them, a quiet round writes nothing, a hand edit is repaired with an
event, a failure stays on its scope, and ADR 0005: the same name from two namespaces, one deleted, the other
untouched."""

from __future__ import annotations

from typing import Any

import kopf
import pytest

from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.kernel import names
from keycloak_operator.shell import replication_handlers as rh
from keycloak_operator.shell.runtime import ReplicationState
from tests.unit.replication.test_replication_round import (
    KC_URL,
    World,
    _client,
    _events,
    _phases,
    _resource,
    make_world,
)

KIND = names.CLIENT_SCOPE_KIND
MAIN = {"name": "main", "namespace": "team-a"}
MAPPER = {
    "name": "team",
    "protocolMapper": "oidc-hardcoded-claim-mapper",
    "config": {"claim.name": "team", "claim.value": "a"},
}
READS = ("realms", "roles", "clients", "client_scopes", "client_roles", "client_scope", "client")


def _scope(ns: str, name: str, **spec: Any) -> dict[str, Any]:
    return _resource(KIND, ns, name, {"realm": MAIN, "name": name, **spec})


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> World:
    w = make_world(monkeypatch)
    w.kube.add(_scope("team-a", "audit", description="audit trail", protocolMappers=[MAPPER]))
    w.kube.add(_client("team-a", "api", MAIN, defaultClientScopes=["basic", "audit"]))
    return w


def _writes(calls: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return [c[1:] for c in calls if c[1] not in READS]


def _in_keycloak(world: World, name: str) -> dict[str, Any]:
    return next(s for s in world.server.realm_scopes("main").values() if s["name"] == name)


def _status(world: World, ns: str, name: str) -> dict[str, Any]:
    return dict(world.obj(KIND, ns, name)["status"])


async def test_a_scope_is_written_before_the_client_attaching_it_then_a_quiet_round_writes_nothing(
    world: World,
) -> None:
    _, calls, writes = await world.round(KC_URL)
    scope_writes = [w for w in _writes(calls) if "scope" in w[0]]
    assert scope_writes[:2] == [
        ("create_client_scope", "main", "audit"),
        ("write_scope_mapper", "main", _in_keycloak(world, "audit")["id"], "create", "team"),
    ]
    created = [w[0] for w in _writes(calls)]
    assert created.index("create_client_scope") < created.index("create_client")
    api = next(c for c in world.server.clients["main"].values() if c["clientId"] == "api")
    assert api["defaultClientScopes"] == ["audit", "basic"]  # attached in the client's create
    assert _phases(writes)["team-a/audit"] == "Ready" and _phases(writes)["team-a/api"] == "Ready"
    assert (KIND, "audit", "Normal", "Created", "created in Keycloak") in _events(writes)
    assert _in_keycloak(world, "audit")["description"] == "audit trail"

    _, calls, writes = await world.round(KC_URL)
    assert _writes(calls) == [] and writes == []


async def test_a_hand_edit_of_the_scope_or_its_mapper_is_repaired_with_an_event(world: World) -> None:
    await world.round(KC_URL)
    _in_keycloak(world, "audit")["description"] = "hijacked"
    _, calls, writes = await world.round(KC_URL)
    assert [w[0] for w in _writes(calls)] == ["update_client_scope"]
    message = "restored fields edited in Keycloak: description"
    assert (KIND, "audit", "Normal", "DriftRepaired", message) in _events(writes)
    assert _in_keycloak(world, "audit")["description"] == "audit trail"

    _in_keycloak(world, "audit")["protocolMappers"][0]["config"]["claim.value"] = "hijacked"
    _, calls, writes = await world.round(KC_URL)
    assert [w[0] for w in _writes(calls)] == ["write_scope_mapper"]
    message = "restored what was edited in Keycloak: protocolMappers/team"
    assert (KIND, "audit", "Normal", "DriftRepaired", message) in _events(writes)
    assert _in_keycloak(world, "audit")["protocolMappers"][0]["config"]["claim.value"] == "a"
    _, calls, writes = await world.round(KC_URL)
    assert _writes(calls) == [] and writes == []


async def test_a_failed_write_stays_on_its_scope_and_a_forbidden_namespace_gets_nothing(world: World) -> None:
    world.kube.add(_scope("team-a", "broken"))
    world.kube.add(_scope("team-c", "intruder"))
    world.server.failing.add("broken")
    delay, calls, writes = await world.round(KC_URL)
    phases = _phases(writes)
    assert phases["team-a/broken"] == "Error" and phases["team-a/audit"] == "Ready"
    assert phases["team-c/intruder"] == "Forbidden" and delay == 10.0
    assert all(s["name"] != "intruder" for s in world.server.realm_scopes("main").values())
    assert ("create_client_scope", "main", "intruder") not in _writes(calls)
    assert any(e[:4] == (KIND, "broken", "Warning", "WriteFailed") for e in _events(writes))


async def test_a_built_in_name_is_a_conflict_and_the_built_in_scope_is_left_alone(world: World) -> None:
    world.kube.add(_scope("team-a", "profile", description="mine now"))
    _, calls, _ = await world.round(KC_URL)
    status = _status(world, "team-a", "profile")
    assert status["phase"] == "Conflict" and "did not create" in status["conditions"][0]["message"]
    assert not [w for w in _writes(calls) if "profile" in w or "s-profile" in w]
    assert [s["name"] for s in world.server.realm_scopes("main").values()] == ["audit"]


async def test_seed_003_the_same_name_in_two_namespaces_one_deleted_the_other_untouched(world: World) -> None:
    world.kube.add(_resource(KIND, "team-b", "audit", {"realm": MAIN, "name": "audit"}))
    await world.round(KC_URL)
    assert _status(world, "team-a", "audit")["phase"] == "Ready"
    assert _status(world, "team-b", "audit")["phase"] == "Conflict"
    kept = dict(_in_keycloak(world, "audit"))

    # The later claim goes: nothing of the holder's is touched, and the later one's finalizer is released.
    world.delete(KIND, "team-b", "audit")
    _, calls, _ = await world.round(KC_URL)
    assert [w for w in _writes(calls) if "scope" in w[0]] == []
    assert _in_keycloak(world, "audit") == kept
    assert (KIND, "team-b", "audit") not in world.kube.objects

    # And the other way round: the holder goes, its object with it; a new claim then takes the name.
    world.kube.add(_resource(KIND, "team-b", "audit", {"realm": MAIN, "name": "audit"}))
    world.delete(KIND, "team-a", "audit")
    _, calls, _ = await world.round(KC_URL)
    assert ("delete_client_scope", "main", kept["id"]) in _writes(calls)
    assert (KIND, "team-a", "audit") not in world.kube.objects
    await world.round(KC_URL)
    assert _status(world, "team-b", "audit")["phase"] == "Ready"
    marker = _in_keycloak(world, "audit")["attributes"][f"{names.GROUP}.namespace"]
    assert marker == "team-b"


class _Lane:
    def __init__(self) -> None:
        self.queued: list[str] = []

    def add(self, url: str) -> None:
        self.queued.append(url)


async def test_a_client_scope_event_queues_its_realms_server_and_the_one_it_left(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lane = _Lane()
    monkeypatch.setattr(rh.runtime, "replication", ReplicationState())
    rh.runtime.replication.own = rh.runtime.replication.external = lane  # type: ignore[assignment]
    main, other = (
        ObjectKey(names.REALM_KIND, "team-a", "main"),
        ObjectKey(names.REALM_KIND, "team-a", "other"),
    )
    rh.runtime.replication.servers.update({main: KC_URL, other: "https://sso.example.com"})

    def body(realm: str) -> kopf.Body:
        return kopf.Body(_scope("team-a", "audit") | {"spec": {"realm": {"name": realm}, "name": "audit"}})

    await rh.ON_EVENT[names.CLIENT_SCOPE_KIND](event={"type": "ADDED"}, body=body("main"))
    assert lane.queued == [KC_URL]
    lane.queued.clear()
    await rh.ON_EVENT[names.CLIENT_SCOPE_KIND](event={"type": "MODIFIED"}, body=body("other"))
    assert sorted(lane.queued) == sorted([KC_URL, "https://sso.example.com"])
    assert rh.runtime.replication.realms_of_client[ObjectKey(KIND, "team-a", "audit")] == other


async def test_a_client_never_attaches_a_scope_another_namespace_declares(world: World) -> None:
    """Found in review: team-b's client named `audit`, team-a's scope (team-b's own `audit` in Conflict),
    and Keycloak attached team-a's, whose mappers then shaped team-b's tokens. A client may attach only
    scopes no resource declares and those of its own namespace."""
    world.kube.add(_resource(KIND, "team-b", "audit", {"realm": MAIN, "name": "audit"}))
    world.kube.add(_client("team-b", "app", MAIN, defaultClientScopes=["basic", "audit"]))
    _, _, writes = await world.round(KC_URL)
    phases = _phases(writes)
    assert phases["team-b/audit"] == "Conflict" and phases["team-b/app"] == "Pending"
    assert not [c for c in world.server.clients["main"].values() if c["clientId"] == "app"]
    # team-a's own client keeps its scope; a built-in (`basic`) stays usable by everyone.
    api = next(c for c in world.server.clients["main"].values() if c["clientId"] == "api")
    assert api["defaultClientScopes"] == ["audit", "basic"]


async def test_a_scopes_mappers_answer_to_the_token_authority(world: World) -> None:
    """A scope's mappers reach every client it is attached to: another team's audience needs a grant."""
    aud = {
        "name": "aud",
        "protocolMapper": "oidc-audience-mapper",
        "config": {"included.client.audience": "web"},
    }
    await world.round(KC_URL)  # team-a's client web is written
    world.kube.add(_scope("team-b", "b-scope", protocolMappers=[MAPPER, aud]))
    await world.round(KC_URL)
    status = _status(world, "team-b", "b-scope")
    assert status["phase"] == "Forbidden" and "audience 'web'" in status["conditions"][0]["message"]
    assert "the rest of the scope was written" in status["conditions"][0]["message"]
    assert {m["name"] for m in _in_keycloak(world, "b-scope").get("protocolMappers") or []} == {"team"}
    grant = {"namespace": "team-b", "clientId": "web", "roles": ["any"]}
    world.obj(names.REALM_KIND, "team-a", "main")["spec"]["serviceAccountGrants"] = [grant]
    await world.round(KC_URL)
    assert _status(world, "team-b", "b-scope")["phase"] == "Ready"
    assert {m["name"] for m in _in_keycloak(world, "b-scope")["protocolMappers"]} == {"team", "aud"}
