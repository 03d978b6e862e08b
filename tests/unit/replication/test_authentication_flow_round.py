"""Authentication flows through whole rounds over the in-memory Kubernetes and Keycloak of
test_replication_round.py (flows behind fake_flows.py): created in order with the id that marks them, a quiet
round writes nothing, a hand reorder is rebuilt with an event, the realm's flowBindings wait for a flow that
does not exist yet (the realm Pending naming the field) and then bind it, bindings name resources of the
realm's own namespace (never an alias another namespace can take), a bound flow being deleted is first
unbound, a rebuild of a bound flow never passes through a state weaker than the old or the new flow, a read
or write failure stays on the flows, and ADR 0005: the same alias from two namespaces."""

from __future__ import annotations

from typing import Any

import pytest

from keycloak_operator.core.replication import authentication_flow as af
from keycloak_operator.core.replication import flow_build, flow_content
from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.kernel import names
from keycloak_operator.models.authentication_flow import KeycloakAuthenticationFlowSpec
from tests.unit.replication.test_replication_round import (
    KC_URL,
    World,
    _events,
    _phases,
    _resource,
    make_world,
)

KIND = names.AUTHENTICATION_FLOW_KIND
MAIN = {"name": "main", "namespace": "team-a"}
STEPS = [
    {"authenticator": "auth-cookie", "requirement": "ALTERNATIVE"},
    {
        "requirement": "ALTERNATIVE",
        "subflow": {
            "alias": "team forms",
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
    (0, "team forms", "ALTERNATIVE"),
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
    assert any(w[0] == "delete_flow" for w in writes)  # rebuilt beside it, swapped in
    message = "restored fields edited in Keycloak: executions"
    assert (KIND, "login", "Normal", "DriftRepaired", message) in _events(kube)
    world.flows.by_alias("main", "team forms")["children"][0]["requirement"] = "DISABLED"
    await _round(world)
    assert _order(world, "login") == WANTED
    writes, kube = await _round(world)
    assert writes == [] and kube == []


async def test_binding_and_swap_writes_keep_the_realms_ciba_and_par_settings(world: World) -> None:
    # Keycloak resets them on a realm PUT that does not send them (the fake does too): every binding write
    # sends the realm's attributes back as it read them.
    world.flows.realm("main")
    hand_set = {"cibaBackchannelTokenDeliveryMode": "ping", "parRequestUriLifespan": "90"}
    world.flows.attributes["main"] = dict(hand_set)
    _bind(world, directGrant="login")
    writes, _ = await _round(world)
    assert ("bind", "main", {"directGrantFlow": "login"}) in writes
    assert world.flows.attributes["main"] == hand_set
    world.flows.by_alias("main", "login")["children"].reverse()  # rebuilt beside, the binding moved
    writes, _ = await _round(world)
    assert any(w[0] == "delete_flow" for w in writes) and any(w[0] == "bind" for w in writes)
    assert world.flows.attributes["main"] == hand_set


async def test_a_binding_to_a_missing_flow_waits_naming_the_field_then_binds(world: World) -> None:
    _bind(world, browser="later", directGrant="login")
    writes, kube = await _round(world)
    assert ("bind", "main", {"directGrantFlow": "login"}) in writes  # the other binding is written
    phases = _phases(kube)
    assert phases["team-a/login"] == "Ready" and phases["team-a/main"] == "Pending"
    assert "spec.flowBindings.browser" in _message(kube, "team-a/main")
    world.kube.add(_flow("team-a", "later", alias="Later flow", executions=STEPS[:1]))
    writes, kube = await _round(world)
    assert ("bind", "main", {"browserFlow": "Later flow"}) in writes  # the resource's flow, by its alias
    assert _phases(kube)["team-a/main"] == "Ready"
    assert world.flows.bindings("main")["browserFlow"] == "Later flow"
    writes, kube = await _round(world)
    assert writes == [] and kube == []


def _message(kube: list[tuple[Any, ...]], who: str) -> str:
    return next(
        w[4]["conditions"][0]["message"]
        for w in kube
        if w[0] == "status" and f"{w[2]}/{w[3]}" == who and "conditions" in w[4]
    )


async def test_a_binding_never_goes_to_another_namespaces_flow_nor_to_an_alias_held_by_another(
    world: World,
) -> None:
    """Finding 1 and 2: team-b (allowed to declare flows) declares a flow named like the binding and another
    with the alias of team-a's; a hand-made flow holds the alias of team-a's resource. The binding goes to
    none of them: only to the flow team-a's own resource owns (by its id), once that exists."""
    world.obj(names.REALM_KIND, "team-a", "main")["spec"]["flowNamespaces"] = ["team-b"]
    world.kube.add(_flow("team-b", "direct", alias="direct", executions=STEPS[:1]))
    world.kube.add(_flow("team-b", "squat", alias="team direct", executions=STEPS[:1]))
    world.flows.realm("main")
    world.flows._add_flow("main", {"id": "hand", "alias": "team direct by hand"})
    world.kube.add(_flow("team-a", "direct", alias="team direct by hand", executions=STEPS[:1]))
    _bind(world, directGrant="direct")
    writes, kube = await _round(world)
    phases = _phases(kube)
    assert phases["team-b/direct"] == "Ready" and phases["team-b/squat"] == "Ready"
    assert phases["team-a/direct"] == "Conflict"  # the alias is held by a hand-made flow
    assert "team direct by hand" in _message(kube, "team-a/direct")
    assert phases["team-a/main"] == "Pending" and "spec.flowBindings.directGrant" in _message(
        kube, "team-a/main"
    )
    assert world.flows.bindings("main")["directGrantFlow"] == "direct grant"
    assert not [w for w in writes if w[0] == "bind"]
    # team-a's resource takes a free alias: its own flow is bound, whatever the others hold.
    world.kube.add(_flow("team-a", "direct", alias="team-a direct", executions=STEPS[:1]))
    await _round(world)
    assert world.flows.bindings("main")["directGrantFlow"] == "team-a direct"
    bound = world.flows.realms["main"]["directGrantFlow"]
    assert bound == af.flow_id("main", ObjectKey(KIND, "team-a", "direct"))


async def test_flows_of_a_namespace_allowed_only_clients_are_forbidden(world: World) -> None:
    world.kube.add(_flow("team-b", "mine", alias="team-b flow"))  # team-b is in clientNamespaces only
    _, kube = await _round(world)
    assert _phases(kube)["team-b/mine"] == "Forbidden"
    assert "spec.flowNamespaces" in _message(kube, "team-b/mine")
    assert not [f for f in world.flows.realm("main").values() if f["alias"] == "team-b flow"]


async def test_deleting_a_bound_flow_unbinds_it_to_the_built_in_first_then_deletes_it(world: World) -> None:
    _bind(world, browser="login")
    await _round(world)
    assert world.flows.bindings("main")["browserFlow"] == "login"
    flow = world.obj(KIND, "team-a", "login")
    flow["metadata"]["deletionTimestamp"] = "2026-01-02T00:00:00Z"
    world.kube.add(flow)
    writes, kube = await _round(world)
    kinds = [w[0] for w in writes]
    assert kinds.index("bind") < kinds.index("delete_flow")
    assert ("bind", "main", {"browserFlow": "browser"}) in writes
    assert world.flows.bindings("main")["browserFlow"] == "browser"
    assert not [f for f in world.flows.realm("main").values() if f["alias"] in ("login", "team forms")]
    assert _phases(kube)["team-a/main"] == "Pending"  # its binding names a flow being deleted


async def test_a_binding_taken_out_of_the_spec_returns_to_the_built_in(world: World) -> None:
    _bind(world, browser="login")
    await _round(world)
    _bind(world)
    writes, _ = await _round(world)
    assert ("bind", "main", {"browserFlow": "browser"}) in writes
    assert [f["alias"] for f in world.flows.realm("main").values() if f["alias"] == "login"] == ["login"]
    writes, kube = await _round(world)
    assert writes == [] and kube == []


def _shape(world: World, flow_id: str) -> list[tuple[Any, ...]]:
    """What a sign-in through the flow runs: each execution's level, step and requirement, and its config's
    values (subflow and config aliases aside: they are names, staged during a rebuild)."""
    flow = world.flows.realm("main")[flow_id]
    out = []
    for e in world.flows.listing("main", flow):
        config = world.flows.configs.get(e.get("authenticationConfig", ""), {}).get("config")
        step = "subflow" if e.get("authenticationFlow") else e["providerId"]
        out.append((e["level"], step, e["requirement"], tuple(sorted((config or {}).items()))))
    return out


STRONGER = [
    {"authenticator": "direct-grant-validate-username", "requirement": "REQUIRED"},
    {"authenticator": "direct-grant-validate-password", "requirement": "REQUIRED"},
    {
        "requirement": "CONDITIONAL",
        "subflow": {
            "alias": "team otp",
            "executions": [
                {"authenticator": "conditional-user-configured", "requirement": "REQUIRED"},
                {
                    "authenticator": "direct-grant-validate-otp",
                    "requirement": "REQUIRED",
                    "config": {"alias": "team otp config", "config": {"x": "1"}},
                },
            ],
        },
    },
]


@pytest.mark.parametrize("change", ["stronger", "weaker", "hand edit"])
async def test_every_state_of_a_bound_flows_rebuild_is_the_old_or_the_new_flow_complete(
    world: World, change: str
) -> None:
    """Finding 3: at every write of a rebuild, the flow the realm binds holds either the old executions or
    the new ones, complete: never a direct grant checking the username without the password, nor a subflow
    enabled before its steps."""
    old = STRONGER if change != "stronger" else STRONGER[:1]
    world.kube.add(_flow("team-a", "direct", alias="team direct", executions=old))
    _bind(world, directGrant="direct")
    await _round(world)
    await _round(world)
    bound = world.flows.realms["main"]["directGrantFlow"]
    assert world.flows.realm("main")[bound]["alias"] == "team direct"
    before = _shape(world, bound)
    new = {"stronger": STRONGER, "weaker": STRONGER[:2]}.get(change, old)
    if change == "hand edit":
        world.flows.realm("main")[bound]["children"][1]["requirement"] = "DISABLED"
        before = _shape(world, bound)  # the edited one is the "old" a sign-in runs now
    world.kube.add(_flow("team-a", "direct", alias="team direct", executions=new))
    seen: list[list[tuple[Any, ...]]] = []

    def check() -> None:
        current = _shape(world, world.flows.realms["main"]["directGrantFlow"])
        seen.append(current)
        assert current in (before, after), f"a bound flow in an intermediate state: {current}"

    after = _declared_shape(new)
    world.flows.after_write = check
    writes, kube = await _round(world)
    world.flows.after_write = None
    # (an assertion inside a write is caught by the round as a failed step: checked again here)
    assert len(seen) > 5 and all(state in (before, after) for state in seen) and seen[-1] == after
    assert _phases(kube).get("team-a/direct", "Ready") == "Ready"
    bound = world.flows.realms["main"]["directGrantFlow"]
    assert world.flows.realm("main")[bound]["alias"] == "team direct"
    assert [f["alias"] for f in world.flows.realm("main").values() if "~" in f["alias"]] == []
    writes, kube = await _round(world)
    assert writes == [] and kube == []


def _declared_shape(steps: list[dict[str, Any]], level: int = 0) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for s in steps:
        config = tuple(sorted(((s.get("config") or {}).get("config") or {}).items()))
        out.append((level, "subflow" if "subflow" in s else s["authenticator"], s["requirement"], config))
        if "subflow" in s:
            out.extend(_declared_shape(s["subflow"]["executions"], level + 1))
    return out


async def test_a_rebuild_interrupted_half_way_is_cleared_and_converges(world: World) -> None:
    _bind(world, browser="login")
    await _round(world)
    world.kube.add(_flow("team-a", "login", executions=STEPS[:1]))
    world.flows.failing.add("login ~1")  # the staged copy cannot be made: the old flow stays bound
    writes, kube = await _round(world)
    assert _phases(kube)["team-a/login"] == "Error"
    assert world.flows.bindings("main")["browserFlow"] == "login" and _order(world, "login") == WANTED
    world.flows.failing.clear()
    # A copy left behind from a swap cut short (made, not yet bound): deleted, then the rebuild goes on.
    key = ObjectKey(KIND, "team-a", "login")
    world.flows._add_flow("main", {"id": af.flow_id("main", key, 1), "alias": "login ~1"})
    await _round(world)
    assert [f["alias"] for f in world.flows.realm("main").values() if f["alias"].startswith("login")] == [
        "login"
    ]
    assert _order(world, "login") == WANTED[:1]
    assert world.flows.bindings("main")["browserFlow"] == "login"
    writes, kube = await _round(world)
    assert writes == [] and kube == []


async def test_a_failed_flow_read_stays_on_the_flows_the_realm_and_its_clients_go_on(world: World) -> None:
    """Finding 4."""
    await _round(world)
    world.flows.unreadable = True
    _, kube = await _round(world)
    phases = _phases(kube)
    assert phases["team-a/login"] == "Error"
    assert "team-a/main" not in phases  # unchanged: Ready


async def test_subflow_and_config_aliases_are_claimed_a_second_claim_is_a_conflict(world: World) -> None:
    """Finding 5: a second resource with the same subflow alias is a Conflict on it, no 409 every round."""
    await _round(world)
    world.kube.add(_flow("team-a", "second", alias="second", executions=STEPS))  # subflow "team forms" again
    writes, kube = await _round(world)
    assert _phases(kube)["team-a/second"] == "Conflict"
    assert "team forms" in _message(kube, "team-a/second")
    assert not [w for w in writes if w[0] == "create_flow"]
    writes, kube = await _round(world)
    assert writes == [] and kube == []


async def test_a_failure_stays_on_its_flow_and_seed_003_the_same_alias_elsewhere_is_a_conflict(
    world: World,
) -> None:
    world.obj(names.REALM_KIND, "team-a", "main")["spec"]["flowNamespaces"] = ["team-b"]
    world.flows.failing.add("broken")
    world.kube.add(_flow("team-a", "broken", executions=[]))
    world.kube.add(_flow("team-b", "login", executions=[]))
    _, kube = await _round(world)
    phases = _phases(kube)
    assert phases["team-a/broken"] == "Error" and phases["team-a/login"] == "Ready"
    assert phases["team-b/login"] == "Conflict"
    assert _order(world, "login") == WANTED


async def test_a_bound_flows_alias_changed_in_the_spec_is_renamed_and_the_binding_follows(
    world: World,
) -> None:
    _bind(world, browser="login")
    await _round(world)
    world.kube.add(_flow("team-a", "login", alias="renamed login"))
    writes, _ = await _round(world)
    assert [w[0] for w in writes] == ["update_flow"]  # executions unchanged: a rename, no rebuild
    assert world.flows.bindings("main")["browserFlow"] == "renamed login"
    writes, kube = await _round(world)
    assert writes == [] and kube == []


async def test_a_leftover_copy_from_a_cut_short_swap_never_unbinds_the_flow(world: World) -> None:
    _bind(world, browser="login")
    await _round(world)
    await _round(world)
    world.kube.add(_flow("team-a", "login", executions=STEPS[:1]))
    key = ObjectKey(KIND, "team-a", "login")
    spec = KeycloakAuthenticationFlowSpec.model_validate(world.obj(KIND, "team-a", "login")["spec"])
    # being built when the operator stopped: not a failed build
    tag = flow_build.build_tag(flow_content.flow_content(spec))
    cut_short = {"id": af.flow_id("main", key, 1), "alias": "login ~1", "description": tag}
    world.flows._add_flow("main", cut_short)
    seen: list[str | None] = []
    world.flows.after_write = lambda: seen.append(world.flows.bindings("main").get("browserFlow"))
    await _round(world)
    assert seen and "browser" not in seen
    assert world.flows.bindings("main")["browserFlow"] == "login"
    assert _order(world, "login") == [(0, "auth-cookie", "ALTERNATIVE")]  # cut short: deleted, rebuilt


def _failing(monkeypatch: pytest.MonkeyPatch, provider: str) -> None:
    from keycloak_operator.shell.admin.connection import AdminError
    from tests.unit import fake_flows

    original = fake_flows.FakeFlowAdmin.add_authenticator

    async def add_authenticator(self: Any, realm: str, parent: str, name: str) -> None:
        if name == provider:
            raise AdminError(400, f"no authenticator {name}")
        await original(self, realm, parent, name)

    monkeypatch.setattr(fake_flows.FakeFlowAdmin, "add_authenticator", add_authenticator)


async def test_a_failing_rebuild_keeps_the_old_flow_bound_marks_the_flow_error_and_does_not_loop(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    _bind(world, browser="login")
    await _round(world)
    await _round(world)
    bad = [{"authenticator": "auth-cookie", "requirement": "ALTERNATIVE"}]
    failing = [*bad, {"authenticator": "no-such", "requirement": "REQUIRED"}]
    world.kube.add(_flow("team-a", "login", executions=failing))
    _failing(monkeypatch, "no-such")
    _, kube = await _round(world)
    assert world.flows.bindings("main")["browserFlow"] == "login"
    assert _phases(kube)["team-a/login"] == "Error"
    for _ in range(2):
        writes, kube = await _round(world)
        assert world.flows.bindings("main")["browserFlow"] == "login"
        assert world.obj(KIND, "team-a", "login")["status"]["phase"] == "Error"
        assert not [w for w in writes if w[0] in ("create_flow", "delete_flow")]  # no create/delete loop
    assert _order(world, "login") == WANTED  # the old complete flow still runs
    world.kube.add(_flow("team-a", "login", executions=bad))  # fixed: rebuilt, the failed copy goes
    _, kube = await _round(world)
    assert _phases(kube)["team-a/login"] == "Ready"
    assert _order(world, "login") == [(0, "auth-cookie", "ALTERNATIVE")]
    assert world.flows.bindings("main")["browserFlow"] == "login"
    key = ObjectKey(KIND, "team-a", "login")
    mine = {af.flow_id("main", key, slot) for slot in af.SLOTS}
    assert len([f for f in world.flows.realm("main").values() if f["id"] in mine]) == 1


async def test_switching_a_binding_to_a_flow_not_ready_keeps_the_bound_one(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    _bind(world, browser="login")
    await _round(world)
    await _round(world)
    _failing(monkeypatch, "no-such")
    failing = [{"authenticator": "no-such", "requirement": "REQUIRED"}]
    world.kube.add(_flow("team-a", "other", executions=failing))
    _bind(world, browser="other")
    _, kube = await _round(world)
    assert world.flows.bindings("main")["browserFlow"] == "login"
    assert _phases(kube)["team-a/main"] == "Pending"
    _bind(world, browser="missing")
    await _round(world)
    assert world.flows.bindings("main")["browserFlow"] == "login"
    _bind(world)
    await _round(world)
    assert world.flows.bindings("main")["browserFlow"] == "browser"  # no longer declared: the built-in


async def test_an_older_resource_cannot_take_a_subflow_alias_a_bound_flow_holds(world: World) -> None:
    world.obj(names.REALM_KIND, "team-a", "main")["spec"]["flowNamespaces"] = ["team-b"]
    a = _flow("team-a", "login")
    a["metadata"]["creationTimestamp"] = "2026-01-02T00:00:00Z"
    world.kube.add(a)
    b = _flow("team-b", "old", alias="b flow", executions=STEPS[:1])
    b["metadata"]["creationTimestamp"] = "2025-01-01T00:00:00Z"
    world.kube.add(b)
    _bind(world, browser="login")
    await _round(world)
    await _round(world)
    b = _flow("team-b", "old", alias="b flow", executions=STEPS)  # subflow "team forms": team-a's
    b["metadata"]["creationTimestamp"] = "2025-01-01T00:00:00Z"
    world.kube.add(b)
    _, kube = await _round(world)
    assert _phases(kube)["team-b/old"] == "Conflict"
    otp = {"authenticator": "auth-otp-form", "requirement": "REQUIRED"}
    a = _flow("team-a", "login", executions=[*STEPS, otp])
    a["metadata"]["creationTimestamp"] = "2026-01-02T00:00:00Z"
    world.kube.add(a)
    writes, _ = await _round(world)
    assert world.obj(KIND, "team-a", "login")["status"]["phase"] == "Ready"
    assert _order(world, "login") == [*WANTED, (0, "auth-otp-form", "REQUIRED")]
    writes, kube = await _round(world)
    assert writes == [] and world.obj(KIND, "team-a", "login")["status"]["phase"] == "Ready"
    assert world.obj(KIND, "team-b", "old")["status"]["phase"] == "Conflict"


async def test_a_failed_re_read_after_writes_or_realm_read_stays_on_the_flows(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    from keycloak_operator.shell.admin.connection import AdminError
    from tests.unit import fake_flows

    reads = {"flows": 0}
    original = fake_flows.FakeFlowAdmin.flows

    async def flows(self: Any, realm: str) -> list[Any]:
        reads["flows"] += 1
        if reads["flows"] > 1:  # the re-read after the writes
            raise AdminError(500, "flows: 500")
        return await original(self, realm)

    monkeypatch.setattr(fake_flows.FakeFlowAdmin, "flows", flows)
    _, kube = await _round(world)  # creates the flow, then its re-read fails
    assert _phases(kube)["team-a/login"] == "Error"
    assert "team-a/main" not in _phases(kube) or _phases(kube)["team-a/main"] != "Error"
    monkeypatch.setattr(fake_flows.FakeFlowAdmin, "flows", original)
    await _round(world)

    realm_reads = {"n": 0}
    read_realm = fake_flows.FakeFlowAdmin.realm_bindings

    async def realm_bindings(self: Any, realm: str) -> Any:
        realm_reads["n"] += 1
        if realm_reads["n"] == 2:  # the first is the bindings pass (the realm's own), then _blocked's
            raise AdminError(500, "realm: 500")
        return await read_realm(self, realm)

    monkeypatch.setattr(fake_flows.FakeFlowAdmin, "realm_bindings", realm_bindings)
    world.delete(KIND, "team-a", "login")  # a deleting flow: the realm is read to see what binds it
    world.obj(KIND, "team-a", "login")["metadata"]["finalizers"] = ["kcop.dev/replication"]
    _, kube = await _round(world)
    assert world.obj(KIND, "team-a", "login")["status"]["phase"] == "Error"
    assert world.obj(names.REALM_KIND, "team-a", "main")["status"]["phase"] != "Error"


async def test_a_flow_an_identity_provider_uses_is_not_rebuilt_said_on_the_flow_no_loop(world: World) -> None:
    """Keycloak refuses to delete a flow a provider uses: the rebuild is not started (no copy made and
    deleted every round), the flow says which provider and how to proceed; the others go on."""
    await _round(world)
    world.idps.realm("main")["up"] = {"alias": "up", "firstBrokerLoginFlowAlias": "login", "config": {}}
    world.kube.add(_flow("team-a", "other", alias="other", executions=STEPS[:1]))
    world.kube.add(_flow("team-a", "login", executions=STEPS[:1]))
    for _ in range(2):
        writes, _ = await _round(world)
        status = world.obj(KIND, "team-a", "login")["status"]
        assert status["phase"] == "Error" and "'up'" in status["conditions"][0]["message"]
        assert not [w for w in writes if w[0] in ("create_flow", "delete_flow") and w[2] != "other"]
        assert world.obj(KIND, "team-a", "other")["status"]["phase"] == "Ready"
    assert _order(world, "login") == WANTED


async def test_a_deleting_flow_a_provider_uses_waits_naming_it_then_goes_once_let_go(world: World) -> None:
    """Keycloak refuses to delete a flow a provider names (fake_flows.py): the flow is not deleted (no
    refused delete, no failed round each time), it stays Deleting naming the provider, and goes in the round
    the provider stops naming it."""
    await _round(world)
    world.idps.realm("main")["up"] = {"alias": "up", "firstBrokerLoginFlowAlias": "login", "config": {}}
    world.delete(KIND, "team-a", "login")
    for _ in range(2):
        delay, _, _ = await world.round(KC_URL)
        status = world.obj(KIND, "team-a", "login")["status"]
        assert delay is None and status["phase"] == "Deleting"
        message = status["conditions"][0]["message"]
        assert "identity provider 'up' (firstBrokerLoginFlowAlias) uses flow 'login'" in message
        assert world.flows.by_alias("main", "login")
    world.idps.realm("main")["up"]["firstBrokerLoginFlowAlias"] = "first broker login"
    writes, _ = await _round(world)
    assert [w[0] for w in writes] == ["delete_flow"]
    assert (KIND, "team-a", "login") not in world.kube.objects


async def test_a_leftover_that_cannot_be_deleted_is_its_own_flows_error_only(world: World) -> None:
    world.kube.add(_flow("team-a", "other", alias="other", executions=STEPS[:1]))
    await _round(world)
    key = ObjectKey(KIND, "team-a", "login")
    world.flows._add_flow("main", {"id": af.flow_id("main", key, 1), "alias": "login ~1"})
    world.flows.failing.add("login ~1")  # Keycloak refuses to delete it (in use by a provider, say)
    for _ in range(2):
        await _round(world)
        status = world.obj(KIND, "team-a", "login")["status"]
        assert status["phase"] == "Error" and "could not be deleted" in status["conditions"][0]["message"]
        assert world.obj(KIND, "team-a", "other")["status"]["phase"] == "Ready"
        assert world.obj(names.REALM_KIND, "team-a", "main")["status"]["phase"] == "Ready"


async def test_every_keycloak_write_of_a_rebuild_takes_a_write_limiter_token(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    from keycloak_operator.shell.ratelimit import WriteLimiter

    taken: list[str] = []
    original = WriteLimiter.acquire

    async def acquire(self: WriteLimiter, namespace: str) -> None:
        taken.append(namespace)
        await original(self, namespace)

    _bind(world, browser="login")
    await _round(world)
    await _round(world)
    monkeypatch.setattr(WriteLimiter, "acquire", acquire)
    otp = {"authenticator": "auth-otp-form", "requirement": "REQUIRED"}
    world.kube.add(_flow("team-a", "login", executions=[*STEPS, otp]))  # a rebuild: some 15 writes
    writes, _ = await _round(world)
    assert len(writes) > 10 and taken.count("team-a") >= len(writes)


def _hidden_subflow(world: World, alias: str) -> None:
    """A subflow alias held by a flow the operator does not see (a hand-made flow's subflow)."""
    world.flows.realm("main")
    world.flows._add_flow("main", {"id": f"hand-{alias}", "alias": alias, "topLevel": False})


HELD = [
    {"authenticator": "auth-cookie", "requirement": "ALTERNATIVE"},
    {
        "requirement": "ALTERNATIVE",
        "subflow": {
            "alias": "held",
            "executions": [{"authenticator": "auth-otp-form", "requirement": "REQUIRED"}],
        },
    },
]


async def test_a_rename_refused_for_an_alias_held_out_of_sight_stops_the_rebuild_loop(world: World) -> None:
    """The swap builds with staged aliases, moves the binding, deletes the old flow, then the subflow's rename
    gets 409: the bound flow is complete, the flow is Error naming the alias, and no round writes again."""
    _bind(world, browser="login")
    await _round(world)
    await _round(world)
    _hidden_subflow(world, "held")
    world.kube.add(_flow("team-a", "login", executions=HELD))
    _, kube = await _round(world)
    assert _phases(kube)["team-a/login"] == "Error"
    assert world.flows.bindings("main")["browserFlow"] == "login"
    assert [r[1] for r in _order(world, "login")] == ["auth-cookie", "held ~1", "auth-otp-form"]
    for _ in range(2):
        writes, kube = await _round(world)
        assert writes == []
        status = world.obj(KIND, "team-a", "login")["status"]
        assert status["phase"] == "Error"
        assert "'held' is held by a flow the operator does not manage" in status["conditions"][0]["message"]
    assert world.flows.bindings("main")["browserFlow"] == "login"


async def test_a_first_build_refused_for_an_alias_held_out_of_sight_is_not_retried_each_round(
    world: World,
) -> None:
    _hidden_subflow(world, "held")
    world.kube.add(_flow("team-a", "other", executions=HELD))
    _, kube = await _round(world)
    assert _phases(kube)["team-a/other"] == "Error"
    for _ in range(2):
        writes, _ = await _round(world)
        assert writes == []
        status = world.obj(KIND, "team-a", "other")["status"]
        assert status["phase"] == "Error" and "'held'" in status["conditions"][0]["message"]


async def test_a_rebuild_cut_by_a_server_error_is_not_a_failed_build_and_is_retried(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    from keycloak_operator.shell.admin.connection import AdminError
    from tests.unit import fake_flows

    _bind(world, browser="login")
    await _round(world)
    original = fake_flows.FakeFlowAdmin.add_authenticator
    down = [True]

    async def add_authenticator(self: Any, realm: str, parent: str, name: str) -> None:
        if down[0] and parent.endswith(" ~1"):
            raise AdminError(503, "Service Unavailable")
        await original(self, realm, parent, name)

    monkeypatch.setattr(fake_flows.FakeFlowAdmin, "add_authenticator", add_authenticator)
    bad = [{"authenticator": "auth-cookie", "requirement": "ALTERNATIVE"}]
    world.kube.add(_flow("team-a", "login", executions=bad))
    _, kube = await _round(world)
    assert _phases(kube)["team-a/login"] == "Error"
    copy = world.flows.by_alias("main", "login ~1")
    assert not str(copy.get("description")).startswith("build failed")  # a leftover, not a failed build
    down[0] = False
    _, kube = await _round(world)
    assert _phases(kube)["team-a/login"] == "Ready"
    assert _order(world, "login") == [(0, "auth-cookie", "ALTERNATIVE")]
    assert world.flows.bindings("main")["browserFlow"] == "login"
