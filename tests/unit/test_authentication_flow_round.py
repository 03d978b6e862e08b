"""Authentication flows through whole rounds over the in-memory Kubernetes and Keycloak of
test_replication_round.py (flows behind fake_flows.py): created in order with the id that marks them, a quiet
round writes nothing, a hand reorder is rebuilt with an event, the realm's flowBindings wait for a flow that
does not exist yet (the realm Pending naming the field) and then bind it, a bound flow's deletion waits for
the binding, a failure stays on its flow, and seed 003: the same alias from two namespaces."""

from __future__ import annotations

from typing import Any

import pytest

from keycloak_operator.core import names
from keycloak_operator.core.replication import authentication_flow as af
from keycloak_operator.core.replication.identity import ObjectKey
from tests.unit.test_replication_round import KC_URL, World, _events, _phases, _resource, make_world

KIND = names.AUTHENTICATION_FLOW_KIND
MAIN = {"name": "main", "namespace": "team-a"}
STEPS = [
    {"authenticator": "auth-cookie", "requirement": "ALTERNATIVE"},
    {
        "requirement": "ALTERNATIVE",
        "subflow": {
            "alias": "forms",
            "executions": [{"authenticator": "auth-username-password-form", "requirement": "REQUIRED"}],
        },
    },
]


def _flow(ns: str, name: str, alias: str | None = None, **spec: Any) -> dict[str, Any]:
    return _resource(KIND, ns, name, {"realm": MAIN, "alias": alias or name, "executions": STEPS, **spec})


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> World:
    w = make_world(monkeypatch)
    w.kube.add(_flow("team-a", "login"))
    return w


async def _round(world: World) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    world.flows.calls.clear()
    _, _, writes = await world.round(KC_URL)
    return world.flows.writes(), writes


def _order(world: World, alias: str) -> list[tuple[int, str, str]]:
    flow = world.flows.by_alias("main", alias)
    return [
        (e["level"], e.get("providerId") or e["displayName"], e["requirement"])
        for e in world.flows.listing("main", flow)
    ]


WANTED = [
    (0, "auth-cookie", "ALTERNATIVE"),
    (0, "forms", "ALTERNATIVE"),
    (1, "auth-username-password-form", "REQUIRED"),
]


def _bind(world: World, **bindings: str) -> None:
    realm = world.obj(names.REALM_KIND, "team-a", "main")
    realm["spec"]["flowBindings"] = bindings
    world.kube.add(realm)


async def test_a_flow_is_created_in_order_with_its_id_then_a_quiet_round_writes_nothing(world: World) -> None:
    writes, kube = await _round(world)
    flow = world.flows.by_alias("main", "login")
    assert flow["id"] == af.flow_id("main", ObjectKey(KIND, "team-a", "login"))
    assert _order(world, "login") == WANTED
    assert writes[0][:3] == ("create_flow", "main", "login")
    assert _phases(kube)["team-a/login"] == "Ready"
    assert (KIND, "login", "Normal", "Created", "created in Keycloak") in _events(kube)
    writes, kube = await _round(world)
    assert writes == [] and kube == []


async def test_a_hand_reorder_or_requirement_edit_is_rebuilt_with_an_event(world: World) -> None:
    await _round(world)
    flow = world.flows.by_alias("main", "login")
    flow["children"].reverse()
    writes, kube = await _round(world)
    assert _order(world, "login") == WANTED
    assert any(w[0] == "delete_exec" for w in writes)
    message = "restored fields edited in Keycloak: executions"
    assert (KIND, "login", "Normal", "DriftRepaired", message) in _events(kube)
    world.flows.by_alias("main", "forms")["children"][0]["requirement"] = "DISABLED"
    await _round(world)
    assert _order(world, "login") == WANTED
    writes, kube = await _round(world)
    assert writes == [] and kube == []


async def test_a_binding_to_a_missing_flow_waits_naming_the_field_then_binds(world: World) -> None:
    _bind(world, browser="later", directGrant="login")
    writes, kube = await _round(world)
    assert ("bind", "main", {"directGrantFlow": "login"}) in writes  # the other binding is written
    phases = _phases(kube)
    assert phases["team-a/login"] == "Ready" and phases["team-a/main"] == "Pending"
    world.kube.add(_flow("team-a", "later", executions=STEPS[:1]))
    writes, kube = await _round(world)
    assert ("bind", "main", {"browserFlow": "later"}) in writes
    assert _phases(kube)["team-a/main"] == "Ready"
    assert world.flows.realms["main"]["browserFlow"] == "later"
    writes, kube = await _round(world)
    assert writes == [] and kube == []


async def test_deleting_a_bound_flow_waits_for_the_binding_then_goes(world: World) -> None:
    _bind(world, browser="login")
    await _round(world)
    flow = world.obj(KIND, "team-a", "login")
    flow["metadata"]["deletionTimestamp"] = "2026-01-02T00:00:00Z"
    world.kube.add(flow)
    writes, kube = await _round(world)
    assert not any(w[0] == "delete_flow" for w in writes)
    assert _phases(kube)["team-a/login"] == "Deleting"
    _bind(world, browser="browser")
    await _round(world)
    await _round(world)
    assert world.flows.realms["main"]["browserFlow"] == "browser"
    assert not [f for f in world.flows.realm("main").values() if f["alias"] in ("login", "forms")]


async def test_a_failure_stays_on_its_flow_and_seed_003_the_same_alias_elsewhere_is_a_conflict(
    world: World,
) -> None:
    world.flows.failing.add("broken")
    world.kube.add(_flow("team-a", "broken", executions=[]))
    world.kube.add(
        _flow("team-b", "login")
    )  # team-b may not declare in realm main's namespace list? a Conflict
    _, kube = await _round(world)
    phases = _phases(kube)
    assert phases["team-a/broken"] == "Error" and phases["team-a/login"] == "Ready"
    assert phases["team-b/login"] == "Conflict"
    assert _order(world, "login") == WANTED
