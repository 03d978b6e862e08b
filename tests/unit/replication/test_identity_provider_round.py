"""Identity providers through whole rounds over the in-memory Kubernetes and Keycloak of
test_replication_round.py: created with the secret from their Secret and their mappers, a quiet round writes
nothing, a hand edit is repaired with an event, a changed Secret is sent, a missing one waits naming the
field, a failure stays on its provider, the secret never reaches a status or an event, and ADR 0005: the
same alias from two namespaces, one deleted, the other untouched."""

from __future__ import annotations

import base64
import json
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
    _events,
    _phases,
    _resource,
    make_world,
)

KIND = names.IDENTITY_PROVIDER_KIND
MAIN = {"name": "main", "namespace": "team-a"}
MAPPER = {
    "name": "email",
    "identityProviderMapper": "oidc-user-attribute-idp-mapper",
    "config": {"claim": "email", "user.attribute": "email"},
}
FIRST, SECOND = "first-S3cret", "second-S3cret"
READS = ("providers", "mappers", "get")


def _idp(ns: str, name: str, secret: str = "upstream", **spec: Any) -> dict[str, Any]:
    oidc = {
        "authorizationUrl": "https://up.example.com/auth",
        "tokenUrl": "https://up.example.com/token",
        "clientId": "kc",
        "clientSecret": {"name": secret, "key": "client-secret"},
    }
    return _resource(
        KIND, ns, name, {"realm": MAIN, "alias": name, "providerId": "oidc", "oidc": oidc, **spec}
    )


def _secret(world: World, ns: str, value: str, name: str = "upstream") -> None:
    data = {"client-secret": base64.b64encode(value.encode()).decode()}
    world.kube.add(
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"namespace": ns, "name": name}, "data": data}
    )


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> World:
    w = make_world(monkeypatch)
    _secret(w, "team-a", FIRST)
    w.kube.add(_idp("team-a", "upstream", displayName="Upstream", mappers=[MAPPER]))
    return w


def _writes(world: World) -> list[tuple[Any, ...]]:
    return [c for c in world.idps.calls if c[0] not in READS]


async def _round(world: World) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    world.idps.calls.clear()
    _, _, writes = await world.round(KC_URL)
    return _writes(world), writes


def _stored(world: World, alias: str) -> dict[str, Any]:
    return world.idps.realm("main")[alias]


def _status(world: World, ns: str, name: str) -> dict[str, Any]:
    return dict(world.obj(KIND, ns, name)["status"])


async def test_a_provider_is_created_with_its_secret_and_mapper_then_a_quiet_round_writes_nothing(
    world: World,
) -> None:
    writes, kube = await _round(world)
    assert [w[:3] for w in writes] == [("create", "main", "upstream"), ("write_mapper", "main", "upstream")]
    assert writes[0][3]["config"]["clientSecret"] == FIRST  # the value, in the request only
    stored = _stored(world, "upstream")
    assert stored["displayName"] == "Upstream" and stored["config"]["kcop.dev.kind"] == KIND
    assert world.idps.mappers["main"]["upstream"][0]["name"] == "email"
    assert _phases(kube)["team-a/upstream"] == "Ready"
    assert (KIND, "upstream", "Normal", "Created", "created in Keycloak") in _events(kube)
    assert _status(world, "team-a", "upstream")["keycloakId"] == "upstream"
    assert FIRST not in json.dumps(kube)  # no status, event or patch holds it

    writes, kube = await _round(world)
    assert writes == [] and kube == []


async def test_a_hand_edit_of_the_provider_or_its_mapper_is_repaired_with_an_event(world: World) -> None:
    await _round(world)
    _stored(world, "upstream")["displayName"] = "hijacked"
    _stored(world, "upstream")["config"]["clientId"] = "hijacked"
    writes, kube = await _round(world)
    assert [w[:3] for w in writes] == [("update", "main", "upstream")]
    assert writes[0][3]["config"]["clientSecret"] == FIRST and writes[0][3]["internalId"]
    message = "restored fields edited in Keycloak: attributes.clientId, displayName"
    assert (KIND, "upstream", "Normal", "DriftRepaired", message) in _events(kube)
    assert _stored(world, "upstream")["displayName"] == "Upstream"

    world.idps.mappers["main"]["upstream"][0]["config"]["claim"] = "hijacked"
    writes, kube = await _round(world)
    assert writes == [("write_mapper", "main", "upstream", "update", "email")]
    message = "restored what was edited in Keycloak: mappers/email"
    assert (KIND, "upstream", "Normal", "DriftRepaired", message) in _events(kube)
    writes, kube = await _round(world)
    assert writes == [] and kube == []


async def test_a_changed_secret_is_sent_and_never_shown(world: World) -> None:
    await _round(world)
    _secret(world, "team-a", SECOND)  # a new resourceVersion
    writes, kube = await _round(world)
    assert [w[:3] for w in writes] == [("update", "main", "upstream")]
    assert writes[0][3]["config"]["clientSecret"] == SECOND
    assert _stored(world, "upstream")["config"]["clientSecret"] == SECOND
    assert (KIND, "upstream", "Normal", "Updated", "updated in Keycloak") in _events(kube)
    assert SECOND not in json.dumps(kube) and FIRST not in json.dumps(kube)
    writes, kube = await _round(world)
    assert writes == [] and kube == []


async def test_a_missing_secret_waits_naming_the_field_and_holds_nobody_else_up(world: World) -> None:
    world.kube.add(_idp("team-a", "other", secret="no-such-secret"))
    writes, _ = await _round(world)
    assert [w[2] for w in writes if w[0] == "create"] == ["upstream"]
    status = _status(world, "team-a", "other")
    assert status["phase"] == "Pending"
    message = status["conditions"][0]["message"]
    assert "spec.oidc.clientSecret: Secret team-a/no-such-secret not found" in message
    assert "other" not in world.idps.realm("main")


async def test_a_failed_write_stays_on_its_provider_and_a_forbidden_namespace_gets_nothing(
    world: World,
) -> None:
    _secret(world, "team-c", FIRST)
    world.kube.add(_idp("team-a", "broken"))
    world.kube.add(_idp("team-c", "intruder"))
    world.idps.failing.add("broken")
    _, kube = await _round(world)
    phases = _phases(kube)
    assert phases["team-a/broken"] == "Error" and phases["team-a/upstream"] == "Ready"
    assert phases["team-c/intruder"] == "Forbidden"
    assert "intruder" not in world.idps.realm("main")
    assert any(e[:4] == (KIND, "broken", "Warning", "WriteFailed") for e in _events(kube))


async def test_seed_003_the_same_alias_in_two_namespaces_one_deleted_the_other_untouched(
    world: World,
) -> None:
    world.obj(names.REALM_KIND, "team-a", "main")["spec"]["identityProviderNamespaces"] = ["team-b"]
    _secret(world, "team-b", SECOND)
    world.kube.add(_idp("team-b", "upstream", displayName="team-b's"))
    await _round(world)
    assert _status(world, "team-a", "upstream")["phase"] == "Ready"
    assert _status(world, "team-b", "upstream")["phase"] == "Conflict"
    kept = dict(_stored(world, "upstream"))
    assert kept["config"]["clientSecret"] == FIRST  # team-b's Secret never reached it

    world.delete(KIND, "team-b", "upstream")
    writes, _ = await _round(world)
    assert writes == [] and _stored(world, "upstream") == kept
    assert (KIND, "team-b", "upstream") not in world.kube.objects

    world.kube.add(_idp("team-b", "upstream", displayName="team-b's"))
    world.delete(KIND, "team-a", "upstream")
    writes, _ = await _round(world)
    assert ("delete", "main", "upstream") in writes
    assert (KIND, "team-a", "upstream") not in world.kube.objects
    await _round(world)
    assert _status(world, "team-b", "upstream")["phase"] == "Ready"
    taken = _stored(world, "upstream")
    assert taken["config"]["kcop.dev.namespace"] == "team-b" and taken["config"]["clientSecret"] == SECOND


async def test_deleting_the_provider_deletes_it_and_its_mappers_and_releases_the_finalizer(
    world: World,
) -> None:
    await _round(world)
    world.delete(KIND, "team-a", "upstream")
    writes, kube = await _round(world)
    assert writes == [("delete", "main", "upstream")]
    assert world.idps.realm("main") == {} and world.idps.mappers["main"] == {}
    assert (KIND, "team-a", "upstream") not in world.kube.objects
    assert (KIND, "upstream", "Normal", "Deleted", "deleted from Keycloak (upstream)") in _events(kube)


class _Lane:
    def __init__(self) -> None:
        self.queued: list[str] = []

    def add(self, url: str) -> None:
        self.queued.append(url)


async def test_an_identity_provider_event_queues_its_realms_server(monkeypatch: pytest.MonkeyPatch) -> None:
    lane = _Lane()
    monkeypatch.setattr(rh.runtime, "replication", ReplicationState())
    rh.runtime.replication.own = rh.runtime.replication.external = lane  # type: ignore[assignment]
    rh.runtime.replication.servers[ObjectKey(names.REALM_KIND, "team-a", "main")] = KC_URL
    await rh.ON_EVENT[names.IDENTITY_PROVIDER_KIND](
        event={"type": "ADDED"}, body=kopf.Body(_idp("team-a", "upstream"))
    )
    assert lane.queued == [KC_URL]


async def test_preserve_on_delete_leaves_the_provider_unmarked_and_lets_go(world: World) -> None:
    await _round(world)
    world.obj(KIND, "team-a", "upstream")["metadata"]["annotations"] = {names.ANNOTATION_PRESERVE: "true"}
    world.delete(KIND, "team-a", "upstream")
    writes, kube = await _round(world)
    assert [w[:3] for w in writes] == [("update", "main", "upstream"), ("write_mapper", "main", "upstream")]
    kept = _stored(world, "upstream")
    assert not any(k.startswith("kcop.dev.") for k in kept["config"])
    assert kept["config"]["clientSecret"] == FIRST  # sent back masked: Keycloak kept the stored one
    [mapper] = world.idps.mappers["main"]["upstream"]  # kept, and no longer the operator's
    assert mapper["name"] == "email" and not any(k.startswith("kcop.dev.") for k in mapper["config"])
    assert (KIND, "team-a", "upstream") not in world.kube.objects
    assert (KIND, "upstream", "Normal", "Released", "left in Keycloak, no longer managed") in _events(kube)


async def test_a_hand_made_provider_is_adopted_through_its_internal_id_when_asked(world: World) -> None:
    world.idps.realm("main")["corp"] = {
        "alias": "corp",
        "providerId": "oidc",
        "enabled": True,
        "internalId": "hand-1",
        "config": {"clientId": "old", "clientSecret": "old-secret"},
    }
    obj = _idp("team-a", "corp")
    obj["metadata"]["annotations"] = {names.ANNOTATION_ADOPT: "true"}
    world.kube.add(obj)
    writes, kube = await _round(world)
    [update] = [w for w in writes if w[2] == "corp"]
    assert update[0] == "update" and update[3]["internalId"] == "hand-1"
    corp = _stored(world, "corp")
    assert corp["config"]["kcop.dev.namespace"] == "team-a" and corp["config"]["clientSecret"] == FIRST
    assert any(e[:4] == (KIND, "corp", "Normal", "Adopted") for e in _events(kube))
    writes, kube = await _round(world)
    assert writes == [] and kube == []


async def test_a_failed_mapper_listing_stays_on_its_provider(world: World) -> None:
    world.kube.add(_idp("team-a", "other", mappers=[MAPPER]))
    world.idps.failing_mappers.add("upstream")
    _, kube = await _round(world)
    phases = _phases(kube)
    assert phases["team-a/upstream"] == "Error" and phases["team-a/other"] == "Ready"
    assert phases["team-a/main"] == "Ready"  # the realm, and every other kind, go on
    assert world.idps.mappers["main"]["other"][0]["name"] == "email"


async def test_a_mapper_handing_out_a_composite_realm_role_is_forbidden_and_nothing_is_written(
    world: World,
) -> None:
    await _round(world)
    world.server.roles["main"]["boss"] = {"name": "boss", "id": "r-boss", "composite": True}
    world.server.roles["main"]["plain"] = {"name": "plain", "id": "r-plain", "composite": False}
    boss = {
        "name": "boss",
        "identityProviderMapper": "oidc-hardcoded-role-idp-mapper",
        "config": {"role": "boss"},
    }
    plain = {**boss, "name": "plain", "config": {"role": "plain"}}
    world.kube.add(_idp("team-a", "evil", mappers=[boss]))
    world.kube.add(_idp("team-a", "fine", mappers=[plain]))
    writes, kube = await _round(world)
    phases = _phases(kube)
    assert phases["team-a/evil"] == "Forbidden" and phases["team-a/fine"] == "Ready"
    assert "evil" not in world.idps.realm("main")
    assert not any(w[2] == "evil" for w in writes)
    message = _status(world, "team-a", "evil")["conditions"][0]["message"]
    assert message.startswith("spec.mappers[boss].config.role: composite realm role 'boss' not granted")


async def test_a_failed_provider_listing_is_the_providers_alone_never_the_realms(world: World) -> None:
    world.idps.failing_list = True
    _, kube = await _round(world)
    phases = _phases(kube)
    assert phases["team-a/upstream"] == "Error" and phases["team-a/main"] == "Ready"
    world.kube.objects.pop((KIND, "team-a", "upstream"))  # no provider declared: nothing is read
    _, kube = await _round(world)
    assert _phases(kube).get("team-a/main", "Ready") == "Ready"
    assert world.idps.calls == []
    assert not any(
        w[0] == "status" and w[2:4] == ("team-a", "main") and w[4].get("phase") == "Error" for w in kube
    )


async def _granted_composite_role_mapper(world: World) -> dict[str, Any]:
    """The realm grants team-a the composite realm role `boss`, and its provider declares a mapper giving it;
    returns the realm resource."""
    await _round(world)
    world.server.roles["main"]["boss"] = {"name": "boss", "id": "r-boss", "composite": True}
    realm = world.obj(names.REALM_KIND, "team-a", "main")
    realm["spec"]["serviceAccountGrants"] = [{"namespace": "team-a", "roles": ["boss"]}]
    boss = {
        "name": "boss",
        "identityProviderMapper": "oidc-hardcoded-role-idp-mapper",
        "config": {"role": "boss"},
    }
    world.obj(KIND, "team-a", "upstream")["spec"]["mappers"] = [MAPPER, boss]
    return realm


async def test_a_withdrawn_grant_takes_the_operator_made_mapper_away(world: World) -> None:
    realm = await _granted_composite_role_mapper(world)
    _, kube = await _round(world)
    assert _status(world, "team-a", "upstream")["phase"] == "Ready"
    assert {m["name"] for m in world.idps.mappers["main"]["upstream"]} == {"email", "boss"}
    realm["spec"]["serviceAccountGrants"] = None
    writes, kube = await _round(world)
    assert _phases(kube)["team-a/upstream"] == "Forbidden"
    assert {m["name"] for m in world.idps.mappers["main"]["upstream"]} == {"email"}
    assert [w[3:5] for w in writes] == [("delete", "boss")]
    assert any(e[:4] == (KIND, "upstream", "Warning", "MapperRevoked") for e in _events(kube))


async def test_leaving_the_mappers_out_does_not_keep_what_a_withdrawn_grant_gave(world: World) -> None:
    """`spec.mappers` absent means the operator leaves the provider's mappers alone, except one it wrote that
    hands out what the namespace may no longer give: it is judged as Keycloak holds it, and goes."""
    realm = await _granted_composite_role_mapper(world)
    await _round(world)
    world.obj(KIND, "team-a", "upstream")["spec"].pop("mappers")  # no longer managed
    world.idps.mappers["main"]["upstream"].append(
        {
            "id": "hand-1",
            "name": "by-hand",
            "identityProviderMapper": "oidc-hardcoded-role-idp-mapper",
            "config": {"role": "boss"},
        }
    )
    writes, kube = await _round(world)
    assert not any(w[0] == "write_mapper" for w in writes)  # still granted: kept, and nothing else is judged
    assert _status(world, "team-a", "upstream")["phase"] == "Ready"
    realm["spec"]["serviceAccountGrants"] = None
    writes, kube = await _round(world)
    assert [w[3:5] for w in writes] == [("delete", "boss")]  # the hand-made one is an admin's to judge
    assert {m["name"] for m in world.idps.mappers["main"]["upstream"]} == {"email", "by-hand"}
    assert any(e[:4] == (KIND, "upstream", "Warning", "MapperRevoked") for e in _events(kube))
    writes, _ = await _round(world)
    assert writes == []


async def test_a_first_login_flow_another_namespace_holds_is_forbidden_never_written(world: World) -> None:
    """An identity provider chooses its first-login flow by alias: another namespace's flow under that alias
    (a squat while the owner's is absent or renamed) is refused, on every write, drift repair too."""
    flow_kind = names.AUTHENTICATION_FLOW_KIND
    world.obj(names.REALM_KIND, "team-a", "main")["spec"]["flowNamespaces"] = ["team-b"]
    steps = [{"authenticator": "idp-create-user-if-unique", "requirement": "ALTERNATIVE"}]
    own = {"realm": MAIN, "alias": "own", "executions": steps}
    world.kube.add(_resource(flow_kind, "team-a", "linking", own))
    squat = {"realm": MAIN, "alias": "linking", "executions": steps}
    world.kube.add(_resource(flow_kind, "team-b", "squat", squat))
    await _round(world)  # the flows are made (after the providers, in a round)
    world.kube.add(_idp("team-a", "upstream", firstBrokerLoginFlowAlias="linking"))
    await _round(world)
    status = _status(world, "team-a", "upstream")
    message = status["conditions"][0]["message"]
    assert status["phase"] == "Forbidden" and "spec.firstBrokerLoginFlowAlias" in message
    assert "a KeycloakAuthenticationFlow of another namespace" in message and "squat" not in message
    assert _stored(world, "upstream").get("firstBrokerLoginFlowAlias") != "linking"
    for alias in ("own", "first broker login"):  # the realm namespace's own flow, a built-in: allowed
        world.kube.add(_idp("team-a", "upstream", firstBrokerLoginFlowAlias=alias))
        await _round(world)
        assert _status(world, "team-a", "upstream")["phase"] == "Ready"
        assert _stored(world, "upstream")["firstBrokerLoginFlowAlias"] == alias
    # The spec names team-b's flow again: the provider (drifted from it) is not repaired, it keeps its flow.
    world.kube.add(_idp("team-a", "upstream", firstBrokerLoginFlowAlias="linking"))
    writes, _ = await _round(world)
    assert _status(world, "team-a", "upstream")["phase"] == "Forbidden"
    assert _stored(world, "upstream")["firstBrokerLoginFlowAlias"] == "first broker login"
    assert not [w for w in writes if w[0] != "mappers"]
