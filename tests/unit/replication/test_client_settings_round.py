"""A client's roles, mappers and scopes through whole rounds over the in-memory Kubernetes and Keycloak of
test_replication_round.py: written once, a quiet round writes nothing, a hand edit is repaired with an
event, a failure stays on its client."""

from __future__ import annotations

from typing import Any

import pytest

from keycloak_operator.kernel import names
from tests.unit.replication.test_replication_round import KC_URL, World, _client, _events, _phases, make_world

MAPPER = {
    "name": "team",
    "protocolMapper": "oidc-hardcoded-claim-mapper",
    "config": {"claim.name": "team", "claim.value": "web"},
}
SETTINGS: dict[str, Any] = {
    "roles": [{"name": "reader"}],
    "protocolMappers": [MAPPER],
    "defaultClientScopes": ["basic", "profile"],
    "pkceMethod": "S256",
}


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> World:
    w = make_world(monkeypatch)
    w.kube.add(_client("team-a", "api", {"name": "main"}, **SETTINGS))
    return w


def _parts(calls: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return [c[4:] for c in calls if c[1] == "write_client_part"]


def _api(world: World) -> dict[str, Any]:
    return next(c for c in world.server.clients["main"].values() if c["clientId"] == "api")


async def test_written_once_then_a_quiet_round_writes_nothing(world: World) -> None:
    _, calls, _ = await world.round(KC_URL)
    assert _parts(calls) == [("role", "create", "reader"), ("mapper", "create", "team")]
    api = _api(world)
    assert api["defaultClientScopes"] == ["basic", "profile"]  # in the create request: no writes
    assert api["attributes"]["pkce.code.challenge.method"] == "S256"
    _, calls, writes = await world.round(KC_URL)
    assert [
        c for c in calls if c[1] not in ("realms", "roles", "clients", "client_roles", "client_scopes")
    ] == []
    assert writes == []


async def test_a_hand_edit_is_repaired_with_an_event_and_a_removed_mapper_deleted(world: World) -> None:
    await world.round(KC_URL)
    api = _api(world)
    api["protocolMappers"][0]["config"]["claim.value"] = "hijacked"
    api["defaultClientScopes"].append("email")
    _, calls, writes = await world.round(KC_URL)
    assert _parts(calls) == [("default-scope", "delete", "email"), ("mapper", "update", "team")]
    message = "restored what was edited in Keycloak: defaultClientScopes/email, protocolMappers/team"
    assert (names.CLIENT_KIND, "api", "Normal", "DriftRepaired", message) in _events(writes)
    assert _api(world)["protocolMappers"][0]["config"]["claim.value"] == "web"

    world.obj(names.CLIENT_KIND, "team-a", "api")["spec"]["protocolMappers"] = []
    _, calls, _ = await world.round(KC_URL)
    assert _parts(calls) == [("mapper", "delete", "team")]
    assert _api(world)["protocolMappers"] == []


async def test_a_missing_scope_and_a_failed_write_stay_on_their_clients(world: World) -> None:
    world.kube.add(_client("team-a", "lost", {"name": "main"}, optionalClientScopes=["nope"]))
    await world.round(KC_URL)
    world.server.failing.add("api")
    _api(world)["protocolMappers"][0]["config"]["claim.value"] = "hijacked"
    delay, _, writes = await world.round(KC_URL)
    phases = _phases(writes)
    assert phases["team-a/api"] == "Error" and delay == 10.0
    lost = world.obj(names.CLIENT_KIND, "team-a", "lost")["status"]
    assert lost["phase"] == "Pending" and "spec.optionalClientScopes" in lost["conditions"][0]["message"]
    assert not any(c["clientId"] == "lost" for c in world.server.clients["main"].values())
    assert world.obj(names.CLIENT_KIND, "team-a", "web")["status"]["phase"] == "Ready"


async def test_a_name_held_by_a_hand_made_mapper_is_a_conflict_that_costs_a_quiet_round_nothing(
    world: World,
) -> None:
    await world.round(KC_URL)
    api = _api(world)
    api["protocolMappers"] = [
        {"id": "h-1", "name": "team", "protocolMapper": "oidc-sub-mapper", "config": {}}
    ]
    _, calls, _ = await world.round(KC_URL)
    assert _parts(calls) == []  # left alone
    status = world.obj(names.CLIENT_KIND, "team-a", "api")["status"]
    assert status["phase"] == "Conflict" and "mapper team" in status["conditions"][0]["message"]
    _, calls, writes = await world.round(KC_URL)
    assert _parts(calls) == [] and writes == []


HIJACK = [
    {"name": "steal-role", "protocolMapper": "oidc-hardcoded-role-mapper", "config": {"role": "web.write"}},
    {
        "name": "steal-aud",
        "protocolMapper": "oidc-audience-mapper",
        "config": {"included.client.audience": "web"},
    },
    MAPPER,
]


def _mapper_names(world: World, client_id: str) -> set[str]:
    c = next(c for c in world.server.clients["main"].values() if c["clientId"] == client_id)
    return {m["name"] for m in c.get("protocolMappers") or []}


def _grant(world: World, *grants: dict[str, Any]) -> None:
    world.obj(names.REALM_KIND, "team-a", "main")["spec"]["serviceAccountGrants"] = list(grants) or None


async def test_another_teams_role_and_audience_in_mappers_need_the_realm_owners_grant(world: World) -> None:
    """Issue 26, finding 1: team-b's client hands its tokens team-a's client role and audience through
    mappers. Refused, naming the field and the grant, the rest written; with the grant, written; the grant
    withdrawn, removed; and held to the rule while the client is not Ready."""
    world.obj(names.CLIENT_KIND, "team-a", "web")["spec"]["roles"] = [{"name": "write"}]
    world.kube.add(
        _client("team-b", "b-api", {"name": "main", "namespace": "team-a"}, protocolMappers=HIJACK)
    )
    await world.round(KC_URL)
    await world.round(KC_URL)
    status = world.obj(names.CLIENT_KIND, "team-b", "b-api")["status"]
    message = status["conditions"][0]["message"]
    assert status["phase"] == "Forbidden", status
    assert message.startswith(
        "spec.protocolMappers[steal-aud].config.included.client.audience: audience 'web'"
    )
    assert "KeycloakRealm team-a/main" in message and "(and 1 more mapper)" in message
    assert _mapper_names(world, "b-api") == {"team"}
    _, _, writes = await world.round(KC_URL)
    assert writes == []  # a lasting refusal costs a quiet round nothing

    _grant(world, {"namespace": "team-b", "clientId": "web", "roles": ["write"]})
    await world.round(KC_URL)
    assert _mapper_names(world, "b-api") == {"team", "steal-role", "steal-aud"}
    assert world.obj(names.CLIENT_KIND, "team-b", "b-api")["status"]["phase"] == "Ready"

    _grant(world)
    await world.round(KC_URL)
    assert _mapper_names(world, "b-api") == {"team"}
    assert world.obj(names.CLIENT_KIND, "team-b", "b-api")["status"]["phase"] == "Forbidden"

    # Granted and written again; then the client waits on a missing scope and the grant goes: what it
    # holds still answers to the rule.
    _grant(world, {"namespace": "team-b", "clientId": "web", "roles": ["write"]})
    await world.round(KC_URL)
    world.obj(names.CLIENT_KIND, "team-b", "b-api")["spec"]["optionalClientScopes"] = ["nope"]
    _grant(world)
    _, _, writes = await world.round(KC_URL)
    assert world.obj(names.CLIENT_KIND, "team-b", "b-api")["status"]["phase"] == "Pending"
    assert _mapper_names(world, "b-api") == {"team"}
    revoked = [e for e in _events(writes) if e[3] == "MapperRevoked"]
    assert revoked and "steal-aud, steal-role" in revoked[0][4]


async def test_a_reserved_claim_needs_a_claims_grant(world: World) -> None:
    sub = {"name": "sub", "protocolMapper": "oidc-hardcoded-claim-mapper", "config": {"claim.name": "sub"}}
    world.kube.add(_client("team-b", "b-api", {"name": "main", "namespace": "team-a"}, protocolMappers=[sub]))
    await world.round(KC_URL)
    status = world.obj(names.CLIENT_KIND, "team-b", "b-api")["status"]
    assert status["phase"] == "Forbidden" and "reserved claim 'sub'" in status["conditions"][0]["message"]
    assert _mapper_names(world, "b-api") == set()
    _grant(world, {"namespace": "team-b", "claims": ["sub"]})
    await world.round(KC_URL)
    assert _mapper_names(world, "b-api") == {"sub"}


async def test_a_granted_mapper_left_unmanaged_still_goes_when_the_grant_does(world: World) -> None:
    """Review finding: dropping spec.protocolMappers (unmanaged) keeps nothing a withdrawn grant gave."""
    world.obj(names.CLIENT_KIND, "team-a", "web")["spec"]["roles"] = [{"name": "write"}]
    world.kube.add(
        _client("team-b", "b-api", {"name": "main", "namespace": "team-a"}, protocolMappers=HIJACK)
    )
    _grant(world, {"namespace": "team-b", "clientId": "web", "roles": ["write"]})
    await world.round(KC_URL)
    await world.round(KC_URL)
    assert _mapper_names(world, "b-api") == {"team", "steal-role", "steal-aud"}
    del world.obj(names.CLIENT_KIND, "team-b", "b-api")["spec"]["protocolMappers"]
    await world.round(KC_URL)
    assert _mapper_names(world, "b-api") == {"team", "steal-role", "steal-aud"}  # unmanaged: kept
    _grant(world)
    _, _, writes = await world.round(KC_URL)
    assert _mapper_names(world, "b-api") == {"team"}
    assert any(e[3] == "MapperRevoked" for e in _events(writes))
    _, _, writes = await world.round(KC_URL)
    assert writes == []
