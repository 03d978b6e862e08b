"""The authentication flow kind's pure planner (core/replication/authentication_flow.py, with flow_content.py
and flow_build.py): the model, the marker (the flow's derived id), create, drift repair (reorder,
requirement, added execution), delete, conflicts (built-ins, hand-made, another namespace's), forbidden
namespaces, and a property: rebuilding a flow from the plan converges, so a second plan over the result is
empty."""

from __future__ import annotations

import itertools
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from keycloak_operator.core.replication import ObjectKey, flow_build, flow_content
from keycloak_operator.core.replication import authentication_flow as af
from keycloak_operator.core.replication import flow_bindings as fb
from keycloak_operator.core.replication.marker import content_hash
from keycloak_operator.core.replication.plan import Create, Delete, Update
from keycloak_operator.core.replication.resources import RealmTarget
from keycloak_operator.core.replication.sync import Resource, Revocation, ScopePlan
from keycloak_operator.kernel import names
from keycloak_operator.models.authentication_flow import (
    BUILT_IN_CONFIGS,
    BUILT_IN_SUBFLOWS,
    KeycloakAuthenticationFlowSpec,
)
from keycloak_operator.models.realm import KeycloakRealmSpec

T0 = datetime(2026, 1, 1, tzinfo=UTC)
REALM = ObjectKey(names.REALM_KIND, "team-a", "main")
RN = "main"
Obj = dict[str, Any]
EXECS = [
    {"authenticator": "auth-cookie", "requirement": "ALTERNATIVE"},
    {
        "requirement": "ALTERNATIVE",
        "subflow": {
            "alias": "team forms",
            "executions": [
                {"authenticator": "auth-username-password-form", "requirement": "REQUIRED"},
                {
                    "requirement": "CONDITIONAL",
                    "subflow": {
                        "alias": "otp",
                        "executions": [
                            {"authenticator": "conditional-user-configured", "requirement": "REQUIRED"},
                            {"authenticator": "auth-otp-form", "requirement": "REQUIRED"},
                        ],
                    },
                },
            ],
        },
    },
]


def k8s(ns: str, name: str, created: int = 0, deleting: bool = False, **spec: Any) -> Obj:
    body = {"realm": {"name": "main", "namespace": "team-a"}, "alias": name, "executions": EXECS, **spec}
    meta: Obj = {
        "namespace": ns,
        "name": name,
        "creationTimestamp": (T0 + timedelta(seconds=created)).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    if deleting:
        meta["deletionTimestamp"] = "2026-01-02T00:00:00Z"
        meta["finalizers"] = ["kcop.dev/replication"]
    return {"kind": af.KIND, "metadata": meta, "spec": body}


def targets(flow_namespaces: frozenset[str] = frozenset({"team-b"})) -> dict[ObjectKey, RealmTarget]:
    realm = Resource(REALM, "main", {}, T0)
    return {REALM: RealmTarget(realm, None, None, frozenset({"team-c"}), flow_namespaces=flow_namespaces)}


def resource(ns: str = "team-a", name: str = "login", **kw: Any) -> Resource:
    return af.flow_resource(k8s(ns, name, **kw), targets())


class FakeRealm:
    """Keycloak's flows of one realm, enough to apply a plan: flows by id, executions flat, configs."""

    def __init__(self) -> None:
        self.flows: dict[str, Obj] = {}
        self.steps: dict[str, list[Obj]] = {}  # top-level flow id -> observed steps (flow_content's shape)

    def add_hand_made(self, alias: str, built_in: bool = False) -> str:
        fid = f"hand-{alias}"
        self.flows[fid] = {"id": fid, "alias": alias, "providerId": "basic-flow", "builtIn": built_in}
        self.steps[fid] = []
        return fid

    def listing(self) -> list[Obj]:
        return list(self.flows.values())

    def apply(self, scope: ScopePlan) -> None:
        for d in scope.plan.deletes:
            self.flows.pop(d.remote_id)
        ops: list[Create | Update] = [*scope.plan.creates, *scope.plan.updates]
        for op in ops:
            if isinstance(op, Create):
                body = flow_build.create_body(op.content, RN, op.key)
            else:
                body = flow_build.update_body(op.content, op.remote_id)
            self.flows[body["id"]] = {**body, "description": body.get("description", "")}
            rebuilt: list[Obj] = []
            for b in flow_build.build_steps(op.content):  # the writer adds each at its parent's end
                step = {k: v for k, v in b.step.items() if k != "providerId"}
                rebuilt.append(step)
            self.steps[body["id"]] = rebuilt


def plan(rs: list[Resource], kc: FakeRealm, **kw: Any) -> ScopePlan:
    return af.plan_flows(rs, kc.listing(), RN, kc.steps, **kw)


# --- the model ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec",
    [
        {"alias": "a<b"},
        {"alias": "x" * 129},
        {"providerId": "form-flow"},
        {"executions": [{"authenticator": "Auth Cookie", "requirement": "REQUIRED"}]},
        {"executions": [{"authenticator": "auth-cookie", "requirement": "SOMETIMES"}]},
        {"executions": [{"requirement": "REQUIRED"}]},  # neither
        {"executions": [{"authenticator": "a", "requirement": "REQUIRED", "subflow": {"alias": "s"}}]},
        {"executions": [{"requirement": "REQUIRED", "subflow": {"alias": "ok"}}]},  # the flow's own alias
        {
            "executions": [
                {
                    "authenticator": "a",
                    "requirement": "REQUIRED",
                    "config": {"alias": "c", "config": {"a/b": "x"}},
                }
            ]
        },
        {"executions": [{"authenticator": "a", "requirement": "REQUIRED"}] * 33},
        # a fourth level: the deepest subflow holds authenticators only
        {
            "executions": [
                {
                    "requirement": "REQUIRED",
                    "subflow": {
                        "alias": "s1",
                        "executions": [
                            {
                                "requirement": "REQUIRED",
                                "subflow": {
                                    "alias": "s2",
                                    "executions": [{"requirement": "REQUIRED", "subflow": {"alias": "s3"}}],
                                },
                            }
                        ],
                    },
                }
            ]
        },
    ],
)
def test_hostile_or_inconsistent_specs_are_refused(spec: Obj) -> None:
    with pytest.raises(ValidationError):
        KeycloakAuthenticationFlowSpec.model_validate({"realm": {"name": "main"}, "alias": "ok", **spec})


def test_content_is_the_executions_depth_first_with_levels() -> None:
    steps = resource().content[flow_content.EXECUTIONS]
    assert [(s["level"], s.get("authenticator") or s["subflow"]) for s in steps] == [
        (0, "auth-cookie"),
        (0, "team forms"),
        (1, "auth-username-password-form"),
        (1, "otp"),
        (2, "conditional-user-configured"),
        (2, "auth-otp-form"),
    ]
    parents = [b.parent for b in flow_build.build_steps(resource().content)]
    assert parents == ["login", "login", "team forms", "team forms", "otp", "otp"]


def test_the_marker_is_an_id_of_the_realm_and_the_identity_only() -> None:
    a, b = ObjectKey(af.KIND, "team-a", "login"), ObjectKey(af.KIND, "team-b", "login")
    assert af.flow_id(RN, a) == af.flow_id(RN, a)
    assert len({af.flow_id(RN, a), af.flow_id(RN, b), af.flow_id("other", a)}) == 3


# --- the planner --------------------------------------------------------------------------------------------


def test_a_new_flow_is_created_with_its_id_then_a_steady_state_writes_nothing() -> None:
    kc, r = FakeRealm(), resource()
    first = plan([r], kc)
    assert [type(op) for op in first.plan.creates] == [Create]
    assert flow_build.create_body(r.content, RN, r.key)["id"] == af.flow_id(RN, r.key)
    kc.apply(first)
    second = plan([r], kc)
    assert not (second.plan.creates or second.plan.updates or second.plan.deletes)
    assert second.verdicts[r.key].phase == "Ready"


@pytest.mark.parametrize(
    "edit",
    [
        lambda s: s.reverse(),  # reordered (levels kept valid enough to differ)
        lambda s: s[0].update(requirement="DISABLED"),
        lambda s: s.append({"level": 0, "authenticator": "auth-spnego", "requirement": "DISABLED"}),
        lambda s: s.pop(),
    ],
)
def test_a_hand_edit_of_the_executions_is_repaired_by_a_rebuild_with_its_drift(edit: Any) -> None:
    kc, r = FakeRealm(), resource()
    kc.apply(plan([r], kc))
    edit(kc.steps[af.flow_id(RN, r.key)])
    scope = plan([r], kc)
    assert [op.key for op in scope.plan.updates] == [r.key]
    assert scope.drift[r.key] == [flow_content.EXECUTIONS]
    kc.apply(scope)
    assert not plan([r], kc).plan.updates


def test_an_edited_spec_updates_the_same_flow_by_its_id_then_writes_nothing() -> None:
    kc, r = FakeRealm(), resource()
    kc.apply(plan([r], kc))
    changed = resource(
        description="new words",
        executions=[*EXECS, {"authenticator": "auth-otp-form", "requirement": "DISABLED"}],
    )
    scope = plan([changed], kc)
    assert [(op.key, op.remote_id) for op in scope.plan.updates] == [(r.key, af.flow_id(RN, r.key))]
    assert not (scope.plan.creates or scope.plan.deletes)
    kc.apply(scope)
    assert kc.flows[af.flow_id(RN, r.key)]["description"] == "new words"
    assert len(kc.steps[af.flow_id(RN, r.key)]) == len(changed.content[flow_content.EXECUTIONS])
    assert not plan([changed], kc).plan.updates


def test_a_spec_change_is_an_update_not_a_repair_once_the_status_recorded_the_last_write() -> None:
    kc, r = FakeRealm(), resource()
    kc.apply(plan([r], kc))
    written = content_hash(r.content)  # what status.contentHash holds after that write
    changed = replace(
        resource(
            description="new words",
            executions=[*EXECS, {"authenticator": "auth-otp-form", "requirement": "DISABLED"}],
        ),
        written_hash=written,
    )
    scope = plan([changed], kc)
    assert [op.key for op in scope.plan.updates] == [r.key] and r.key not in scope.drift
    # A hand edit of a flow whose spec did not change since its last write is drift, as is one whose status
    # recorded nothing (taken as in step).
    kc.flows[af.flow_id(RN, r.key)]["description"] = "by hand"
    for same in (replace(r, written_hash=written), r):
        assert "description" in plan([same], kc).drift[r.key]


def test_a_hand_edited_description_is_drift_too() -> None:
    kc, r = FakeRealm(), resource()
    kc.apply(plan([r], kc))
    kc.flows[af.flow_id(RN, r.key)]["description"] = "by hand"
    scope = plan([r], kc)
    assert [op.key for op in scope.plan.updates] == [r.key]
    assert "description" in scope.drift[r.key]


def test_a_deleted_resource_deletes_its_flow_and_is_finalizable_once_gone() -> None:
    kc, r = FakeRealm(), resource()
    kc.apply(plan([r], kc))
    gone = resource(deleting=True)
    scope = plan([gone], kc)
    assert scope.plan.deletes == [Delete(r.key, af.flow_id(RN, r.key))]
    kc.apply(scope)
    assert plan([gone], kc).finalizable == [r.key]


@pytest.mark.parametrize("alias", sorted(af.BUILT_INS))
def test_a_built_in_alias_is_a_conflict_never_adopted(alias: str) -> None:
    kc = FakeRealm()
    kc.add_hand_made(alias, built_in=True)
    r = af.flow_resource(
        {
            **k8s("team-a", "mine", alias=alias),
            "metadata": {
                **k8s("team-a", "mine")["metadata"],
                "annotations": {names.ANNOTATION_ADOPT: "true"},
            },
        },
        targets(),
    )
    scope = plan([r], kc)
    assert scope.verdicts[r.key].phase == "Conflict"
    assert not (scope.plan.creates or scope.plan.updates or scope.plan.deletes)


def test_a_hand_made_flow_is_never_touched_even_when_its_alias_is_declared() -> None:
    kc = FakeRealm()
    hand = kc.add_hand_made("login")
    r = resource()
    scope = plan([r], kc)
    assert scope.verdicts[r.key].phase == "Conflict"
    assert not (scope.plan.creates or scope.plan.updates or scope.plan.deletes)
    assert hand in kc.flows


def test_seed_003_the_same_alias_in_two_namespaces_the_second_is_a_conflict_the_first_untouched() -> None:
    kc = FakeRealm()
    a = resource("team-a")
    kc.apply(plan([a], kc))
    b = af.flow_resource(k8s("team-b", "login", created=5), targets())
    scope = plan([a, b], kc)
    assert scope.verdicts[a.key].phase == "Ready" and scope.verdicts[b.key].phase == "Conflict"
    assert not (scope.plan.creates or scope.plan.updates or scope.plan.deletes)
    # team-b's resource deleted: team-a's flow stays.
    gone_b = af.flow_resource(k8s("team-b", "login", created=5, deleting=True), targets())
    scope = plan([a, gone_b], kc)
    assert not scope.plan.deletes and gone_b.key in scope.finalizable


def test_a_namespace_the_realm_does_not_allow_is_forbidden_and_writes_nothing() -> None:
    """team-c is in the realm's clientNamespaces, not in its flowNamespaces: flows have their own list."""
    kc = FakeRealm()
    r = af.flow_resource(k8s("team-c", "login"), targets())
    scope = plan([r], kc)
    assert scope.verdicts[r.key].phase == "Forbidden"
    assert r.problem is not None and "spec.flowNamespaces" in r.problem.message
    assert not scope.plan.creates
    assert af.flow_resource(k8s("team-b", "login"), targets()).problem is None
    assert af.flow_resource(k8s("team-b", "login"), targets(frozenset())).problem is not None


def test_preserve_on_delete_leaves_the_flow_in_keycloak() -> None:
    kc, r = FakeRealm(), resource()
    kc.apply(plan([r], kc))
    obj = k8s("team-a", "login", deleting=True)
    obj["metadata"]["annotations"] = {names.ANNOTATION_PRESERVE: "true"}
    kept = af.flow_resource(obj, targets())
    scope = plan([kept], kc)
    # The id cannot be unmarked: a release writes nothing, and the flow is left as it is.
    assert not scope.plan.deletes and [x.key for x in scope.releases] == [r.key]


# --- the property -------------------------------------------------------------------------------------------

AUTHS = ["auth-cookie", "auth-otp-form", "auth-spnego", "auth-username-password-form"]
REQS = ["REQUIRED", "ALTERNATIVE", "DISABLED", "CONDITIONAL"]
_names = itertools.count()


@st.composite
def executions(draw: st.DrawFn, depth: int = 0) -> list[Obj]:
    out: list[Obj] = []
    for _ in range(draw(st.integers(0, 3))):
        req = draw(st.sampled_from(REQS))
        if depth < 2 and draw(st.booleans()):
            sub = {"alias": f"sub-{next(_names)}", "executions": draw(executions(depth + 1))}
            out.append({"requirement": req, "subflow": sub})
        else:
            out.append({"authenticator": draw(st.sampled_from(AUTHS)), "requirement": req})
    return out


@settings(max_examples=60, deadline=None)
@given(before=executions(), after=executions(), shuffle=st.randoms(use_true_random=False))
def test_applying_a_plan_converges_and_a_second_plan_is_empty(
    before: list[Obj], after: list[Obj], shuffle: Any
) -> None:
    kc = FakeRealm()
    kc.apply(plan([af.flow_resource(k8s("team-a", "login", executions=before), targets())], kc))
    shuffle.shuffle(kc.steps[af.flow_id(RN, ObjectKey(af.KIND, "team-a", "login"))])  # a hand edit
    r = af.flow_resource(k8s("team-a", "login", executions=after), targets())
    kc.apply(plan([r], kc))
    again = plan([r], kc)
    assert not (again.plan.creates or again.plan.updates or again.plan.deletes)
    assert kc.steps[af.flow_id(RN, r.key)] == [
        {k: v for k, v in s.items() if k != "providerId"} for s in r.content[flow_content.EXECUTIONS]
    ]


# --- the realm's bindings (flow_bindings.py) ----------------------------------------------------------------

DIRECT = ObjectKey(af.KIND, "team-a", "direct")
OURS = {"team direct", "team-b direct"}


def test_a_binding_goes_to_the_alias_of_the_flow_its_resource_owns_only_once_ready() -> None:
    realm = {"directGrantFlow": "direct grant", "browserFlow": "browser"}
    ready = {DIRECT: fb.OwnFlow("team direct", "ready")}
    assert fb.plan_bindings({"directGrant": "direct"}, "team-a", realm, ready, OURS).body == {
        "directGrantFlow": "team direct"
    }
    waiting = fb.plan_bindings(
        {"directGrant": "direct"}, "team-a", realm, {DIRECT: fb.OwnFlow("x", "waiting")}, OURS
    )
    assert waiting.body == {} and "not Ready" in waiting.missing[0]
    # Bound already and not Ready (a rebuild failed): the binding stays on the old complete flow.
    bound = {**realm, "directGrantFlow": "team direct"}
    kept = fb.plan_bindings(
        {"directGrant": "direct"}, "team-a", bound, {DIRECT: fb.OwnFlow("team direct", "waiting")}, OURS
    )
    assert kept.body == {}
    # Bound to another flow of ours (its other slot: a swap cut short; or the flow bound before a switch):
    # kept while the named one is not Ready, never the built-in.
    for state in ("waiting", "deleting"):
        other = {**realm, "directGrantFlow": "team-b direct"}
        plan = fb.plan_bindings(
            {"directGrant": "direct"}, "team-a", other, {DIRECT: fb.OwnFlow("team direct", state)}, OURS
        )
        assert plan.body == {} and plan.missing
    # Unless the bound one is itself being deleted.
    plan = fb.plan_bindings(
        {"directGrant": "direct"},
        "team-a",
        {**realm, "directGrantFlow": "team-b direct"},
        {DIRECT: fb.OwnFlow("team direct", "waiting")},
        OURS,
        going={"team-b direct"},
    )
    assert plan.body == {"directGrantFlow": "direct grant"}


def test_a_binding_names_a_resource_of_the_realms_namespace_never_another_namespaces_or_an_alias() -> None:
    realm = {"directGrantFlow": "direct grant"}
    # team-b's resource of the same name, and a flow whose alias is the binding's value: neither is bound.
    flows = {ObjectKey(af.KIND, "team-b", "direct"): fb.OwnFlow("direct", "ready")}
    plan = fb.plan_bindings({"directGrant": "direct"}, "team-a", realm, flows, {"direct"})
    assert plan.body == {}
    assert plan.missing == [
        "spec.flowBindings.directGrant: KeycloakAuthenticationFlow team-a/direct is not declared for this "
        "realm, or has no flow in Keycloak yet"
    ]


@pytest.mark.parametrize("value", ["team-b/direct", "Team Direct", "direct grant"])
def test_the_realm_model_refuses_a_binding_that_is_not_a_resource_name_naming_the_field(value: str) -> None:
    with pytest.raises(ValidationError) as e:
        KeycloakRealmSpec.model_validate(
            {"server": {"keycloakRef": {"name": "kc"}}, "flowBindings": {"directGrant": value}}
        )
    assert "flowBindings.directGrant" in str(e.value)


def test_a_binding_to_a_flow_of_ours_no_longer_declared_or_deleting_returns_to_the_built_in() -> None:
    realm = {
        "browserFlow": "team direct",
        "directGrantFlow": "team-b direct",
        "dockerAuthenticationFlow": "x",
    }
    going = {DIRECT: fb.OwnFlow("team direct", "deleting")}
    plan = fb.plan_bindings(
        {"browser": "direct"}, "team-a", realm, going, OURS, going={"team direct"}, reverts_only=True
    )
    # Both of ours go back (team-b's, bound by hand, too); a flow not ours ("x") is left as it is.
    assert plan.body == {"browserFlow": "browser", "directGrantFlow": "direct grant"}
    assert fb.plan_bindings({}, "team-a", {"browserFlow": "browser"}, {}, OURS).body == {}


def test_reverts_only_never_binds_a_new_flow() -> None:
    ready = {DIRECT: fb.OwnFlow("team direct", "ready")}
    realm = {"directGrantFlow": "direct grant"}
    assert (
        fb.plan_bindings({"directGrant": "direct"}, "team-a", realm, ready, OURS, reverts_only=True).body
        == {}
    )


def test_absent_bindings_leave_the_realm_content_as_it_was() -> None:
    from keycloak_operator.core.replication.realm import realm_content

    base = {"server": {"keycloakRef": {"name": "kc"}}}
    with_bindings = {**base, "flowBindings": {"browser": "login"}}
    assert fb.declared_bindings({"spec": base}) == {}
    assert fb.declared_bindings({"spec": with_bindings}) == {"browser": "login"}
    # The realm's own content (and hash) does not hold them: the flow writer writes them.
    assert realm_content(KeycloakRealmSpec.model_validate(base), "r") == realm_content(
        KeycloakRealmSpec.model_validate(with_bindings), "r"
    )


def test_a_flow_is_bound_by_any_of_the_realms_bindings() -> None:
    realm = {"browserFlow": "login", "dockerAuthenticationFlow": "login", "directGrantFlow": "other"}
    assert fb.bound_by(realm, "login") == ["browserFlow", "dockerAuthenticationFlow"]
    assert fb.bound_by(realm, "none") == []
    assert set(fb.DEFAULTS) == set(fb.REALM_BINDINGS)


def test_a_deleting_flow_the_realm_binds_is_blocked_not_deleted() -> None:
    kc, r = FakeRealm(), resource()
    kc.apply(plan([r], kc))
    gone = resource(deleting=True)
    scope = plan([gone], kc, blocked={gone.key: "the realm binds flow 'login' (browserFlow)"})
    assert not scope.plan.deletes and gone.key not in scope.finalizable
    assert (scope.verdicts[gone.key].phase, scope.verdicts[gone.key].reason) == (
        "Deleting",
        "DeletionBlocked",
    )


def test_a_config_value_keycloak_masks_is_not_drift_but_a_changed_one_is() -> None:
    execs = [
        {
            "authenticator": "auth-otp-form",
            "requirement": "REQUIRED",
            "config": {"alias": "otp", "config": {"secretish": "x", "plain": "y"}},
        }
    ]
    r = resource(executions=execs)
    seen = [
        {
            **r.content[flow_content.EXECUTIONS][0],
            "config": {"alias": "otp", "config": {"plain": "y", "secretish": flow_content.MASKED}},
        }
    ]
    assert not flow_content.executions_differ(r.content, seen)
    seen[0]["config"]["config"]["plain"] = "edited"
    assert flow_content.executions_differ(r.content, seen)


# --- the review's findings: aliases claimed, built-ins and scripts refused, revocation, rebuilds ---------


def _leaf(alias: str = "c", **extra: Any) -> Obj:
    return {"authenticator": "auth-otp-form", "requirement": "REQUIRED", **extra}


@pytest.mark.parametrize("alias", [*sorted(BUILT_IN_SUBFLOWS), "Forms", "browser", "Direct Grant"])
def test_a_built_in_subflow_alias_is_refused_in_the_model(alias: str) -> None:
    spec = {
        "realm": {"name": "main"},
        "alias": "ok",
        "executions": [{"requirement": "REQUIRED", "subflow": {"alias": alias}}],
    }
    with pytest.raises(ValidationError, match="one of Keycloak's own"):
        KeycloakAuthenticationFlowSpec.model_validate(spec)


@pytest.mark.parametrize("alias", sorted(BUILT_IN_CONFIGS))
def test_a_built_in_config_alias_is_refused_in_the_model(alias: str) -> None:
    spec = {"realm": {"name": "main"}, "alias": "ok", "executions": [_leaf(config={"alias": alias})]}
    with pytest.raises(ValidationError, match="one of Keycloak's own"):
        KeycloakAuthenticationFlowSpec.model_validate(spec)


def test_a_script_authenticator_is_refused_in_the_model_naming_it() -> None:
    spec = {
        "realm": {"name": "main"},
        "alias": "ok",
        "executions": [{"authenticator": "script-x.js", "requirement": "REQUIRED"}],
    }
    with pytest.raises(ValidationError, match=r"script-x\.js"):
        KeycloakAuthenticationFlowSpec.model_validate(spec)


def test_a_second_resource_claiming_a_subflow_or_config_alias_is_a_conflict_the_first_written() -> None:
    kc = FakeRealm()
    first = resource("team-a", "login")
    same_sub = af.flow_resource(k8s("team-a", "other", created=5), targets())  # "team forms" and "otp" again
    config = [_leaf(config={"alias": "shared"})]
    c1 = af.flow_resource(k8s("team-a", "c1", created=6, executions=config), targets())
    c2 = af.flow_resource(k8s("team-a", "c2", created=7, executions=config), targets())
    top = af.flow_resource(k8s("team-a", "otp", created=8, executions=[]), targets())  # login's subflow
    scope = plan([first, same_sub, c1, c2, top], kc)
    phases = {k.name: v.phase for k, v in scope.verdicts.items()}
    assert phases == {
        "login": "Ready",
        "other": "Conflict",
        "c1": "Ready",
        "c2": "Conflict",
        "otp": "Conflict",
    }
    assert (
        "'team forms'" in scope.verdicts[same_sub.key].message
        and "team-a/login" in scope.verdicts[same_sub.key].message
    )
    assert "'shared'" in scope.verdicts[c2.key].message
    assert {op.key.name for op in scope.plan.creates} == {"login", "c1"}


def test_a_subflow_alias_held_by_a_hand_made_flow_is_a_conflict() -> None:
    kc = FakeRealm()
    kc.add_hand_made("otp")
    r = resource()
    scope = plan([r], kc)
    assert scope.verdicts[r.key].phase == "Conflict" and "'otp'" in scope.verdicts[r.key].message
    assert not scope.plan.creates


def test_revocation_never_plans_a_disable_a_flow_has_none() -> None:
    kc, r = FakeRealm(), resource("team-b", "login")
    kc.apply(plan([r], kc))
    revoked = af.flow_resource(k8s("team-b", "login"), targets(frozenset()))
    revoked = Resource(**{**revoked.__dict__, "forbidden_since": T0})
    disable_stage = Revocation(T0 + timedelta(hours=1, minutes=30), timedelta(hours=1))
    scope = plan([revoked], kc, revocation=disable_stage)
    assert scope.disables == [] and not scope.plan.deletes
    delete_stage = Revocation(T0 + timedelta(hours=3), timedelta(hours=1))
    scope = plan([revoked], kc, revocation=delete_stage)
    assert scope.disables == [] and [d.remote_id for d in scope.plan.deletes] == [af.flow_id(RN, r.key)]


def test_a_rebuild_is_staged_under_aliases_no_declared_one_can_hold_then_renamed() -> None:
    r = resource(executions=[_leaf(config={"alias": "cfg", "config": {"a": "1"}}), *EXECS])
    staged = flow_build.staged(r.content, 1)
    assert staged["alias"] == "login ~1"
    assert [
        s.get("subflow") or s.get("config", {}).get("alias")
        for s in staged[flow_content.EXECUTIONS]
        if "subflow" in s or "config" in s
    ] == [
        "cfg ~1",
        "team forms ~1",
        "otp ~1",
    ]
    with pytest.raises(ValidationError):  # no declared alias looks staged
        KeycloakAuthenticationFlowSpec.model_validate({"realm": {"name": "main"}, "alias": "login ~1"})
    listing = [
        {"id": "e1", "authenticationConfig": "c1", "providerId": "auth-otp-form"},
        {"id": "e2", "providerId": "auth-cookie"},
        {"id": "e3", "authenticationFlow": True, "flowId": "f1", "displayName": "team forms ~1"},
    ]
    out = flow_build.renames(listing, r.content)
    assert [(x.what, x.remote_id, x.body["alias"]) for x in out] == [
        ("config", "c1", "cfg"),
        ("flow", "f1", "team forms"),
    ]
    assert out[1].body["topLevel"] is False


def test_requirements_are_set_from_the_last_execution_up() -> None:
    assert flow_build.requirement_order(3) == [2, 1, 0]


def test_two_flows_of_one_resource_the_bound_one_stays_else_the_one_not_staged() -> None:
    key = ObjectKey(af.KIND, "team-a", "login")
    r = resource()
    zero = {"id": af.flow_id(RN, key, 0), "alias": "login"}
    one = {"id": af.flow_id(RN, key, 1), "alias": "login ~1"}
    assert flow_build.leftovers([zero, one], RN, [r], set()) == [one["id"]]
    assert flow_build.leftovers([zero, one], RN, [r], {"login ~1"}) == [zero["id"]]
    assert flow_build.leftovers([zero], RN, [r], set()) == []
    # Both slots are the resource's: the marker is either id.
    assert af.owner_of(RN, [r], one["id"]) == key and af.owner_of(RN, [r], "random") is None


def test_the_resource_whose_flow_holds_a_subflow_or_config_alias_keeps_it_over_an_older_one() -> None:
    kc = FakeRealm()
    config = [_leaf(config={"alias": "shared"})]
    holder = af.flow_resource(k8s("team-a", "login", created=9), targets())
    held = af.flow_resource(k8s("team-a", "c1", created=9, executions=config), targets())
    kc.apply(plan([holder, held], kc))
    older = af.flow_resource(k8s("team-b", "old", created=0), targets())  # "team forms" and "otp" again
    older_config = af.flow_resource(k8s("team-b", "c0", created=0, executions=config), targets())
    scope = plan([holder, held, older, older_config], kc)
    phases = {k.name: v.phase for k, v in scope.verdicts.items()}
    assert phases == {"login": "Ready", "c1": "Ready", "old": "Conflict", "c0": "Conflict"}
    message = scope.verdicts[older.key].message
    assert "a KeycloakAuthenticationFlow of another namespace" in message and "team-a" not in message
    assert not scope.plan.creates and not scope.plan.updates and not scope.plan.deletes


def test_a_failed_build_of_the_current_spec_is_kept_once_the_spec_changes_it_is_a_leftover() -> None:
    key = ObjectKey(af.KIND, "team-a", "login")
    r = resource()
    zero = {"id": af.flow_id(RN, key, 0), "alias": "login", "description": ""}
    copy = flow_build.staged(r.content, 1)
    cut_short = {"id": af.flow_id(RN, key, 1), "alias": copy["alias"], "description": copy["description"]}
    assert flow_build.failed_build([zero, cut_short], RN, r, set()) is None  # a stop, not a refusal: retried
    assert flow_build.leftovers([zero, cut_short], RN, [r], set()) == [cut_short["id"]]
    one = {**cut_short, "description": flow_build.build_tag(r.content, failed=True)}
    assert flow_build.failed_build([zero, one], RN, r, set()) == one
    assert flow_build.leftovers([zero, one], RN, [r], set()) == []
    changed = resource(executions=EXECS[:1])
    assert flow_build.failed_build([zero, one], RN, changed, set()) is None
    assert flow_build.leftovers([zero, one], RN, [changed], set()) == [one["id"]]
    assert flow_build.failed_build([zero, one], RN, resource(deleting=True), set()) is None


def test_a_flow_of_more_than_64_executions_in_all_is_refused_naming_the_field() -> None:
    sub = {"alias": "s", "executions": [_leaf()] * 16}
    executions = [{"requirement": "REQUIRED", "subflow": {**sub, "alias": f"s{i}"}} for i in range(4)]
    with pytest.raises(ValidationError) as e:  # 4 subflows of 16: 68 in all
        KeycloakAuthenticationFlowSpec.model_validate(
            {**k8s("team-a", "big")["spec"], "executions": executions}
        )
    assert "spec.executions: 68 executions in all" in str(e.value)
    KeycloakAuthenticationFlowSpec.model_validate(
        {**k8s("team-a", "big")["spec"], "executions": executions[:3]}  # 51: allowed
    )


def test_flows_past_the_cap_of_a_namespace_in_a_realm_are_an_error_nothing_written() -> None:
    kc = FakeRealm()
    rs = [
        af.flow_resource(k8s("team-a", f"f{i:02}", created=i, executions=[_leaf()]), targets())
        for i in range(af.FLOWS_PER_NAMESPACE + 2)
    ]
    other = af.flow_resource(k8s("team-b", "b", created=99, executions=[_leaf()]), targets())
    scope = plan([*rs, other], kc)
    refused = {k.name for k, v in scope.verdicts.items() if v.phase == "Error"}
    assert refused == {f"f{af.FLOWS_PER_NAMESPACE:02}", f"f{af.FLOWS_PER_NAMESPACE + 1:02}"}
    assert scope.verdicts[rs[-1].key].reason == "TooManyFlows"
    assert {op.key.name for op in scope.plan.creates} == {r.key.name for r in rs[:-2]} | {"b"}


def test_a_flow_tagged_a_failed_build_of_its_spec_in_place_is_an_error_naming_the_missing_alias() -> None:
    """A swapped-in flow whose subflow rename got 409 (staged aliases left), tagged failed: left as it is."""
    r = resource(executions=EXECS)
    tag = flow_build.build_tag(r.content, failed=True)
    tagged = {"id": af.flow_id("main", r.key), "alias": "login", "description": tag}
    steps = flow_build.staged(r.content, 1)[flow_content.EXECUTIONS]
    verdict = flow_build.refused_in_place(tagged, r, steps)
    assert verdict is not None and verdict.phase == "Error"
    assert "'team forms', 'otp'" in verdict.message and "held by a flow the operator does not manage" in (
        verdict.message
    )
    building = {**tagged, "description": flow_build.build_tag(r.content)}
    assert flow_build.refused_in_place(building, r, steps) is None
    assert flow_build.refused_in_place({**tagged, "alias": f"login{flow_build.STAGED}1"}, r, steps) is None
    assert flow_build.refused_in_place(tagged, resource(executions=EXECS, deleting=True), steps) is None
    other = resource(executions=EXECS[:1])
    assert flow_build.refused_in_place(tagged, other, steps) is None  # the spec changed: rebuilt
