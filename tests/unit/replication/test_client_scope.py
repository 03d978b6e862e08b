"""The client scope kind's pure planner (core/replication/client_scope.py): create, update, drift repair,
delete order, conflicts, forbidden namespaces, what is left alone, and a property: applying a plan to what
Keycloak holds converges, so a second plan over the result is empty."""

from __future__ import annotations

import copy
import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from keycloak_operator.core.replication import ObjectKey, content_hash, marked, read_marker
from keycloak_operator.core.replication import client_scope as cs
from keycloak_operator.core.replication.marker import MARKER_ATTRIBUTES
from keycloak_operator.core.replication.plan import Create, Delete, Update
from keycloak_operator.core.replication.resources import RealmTarget
from keycloak_operator.core.replication.sync import Disable, Release, Resource, Revocation, ScopePlan
from keycloak_operator.kernel import names
from keycloak_operator.models.client_scope import KeycloakClientScopeSpec
from tests.unit import builders

T0 = datetime(2026, 1, 1, tzinfo=UTC)
REALM = ObjectKey(names.REALM_KIND, "team-a", "main")
MAPPER = {
    "name": "team",
    "protocolMapper": "oidc-hardcoded-claim-mapper",
    "config": {"claim.name": "team", "claim.value": "a"},
}
Obj = dict[str, Any]


def k8s(ns: str, resource_name: str, created: int = 0, **spec: Any) -> Obj:
    """A KeycloakClientScope `ns/name` in realm team-a/main; the scope's name is `name` unless given."""
    body = {"realm": {"name": "main", "namespace": "team-a"}, "name": resource_name, **spec}
    stamp = (T0 + timedelta(seconds=created)).strftime("%Y-%m-%dT%H:%M:%SZ")
    meta = {"namespace": ns, "name": resource_name, "creationTimestamp": stamp}
    return {"kind": cs.KIND, "metadata": meta, "spec": body}


def targets(client_namespaces: frozenset[str] = frozenset()) -> dict[ObjectKey, RealmTarget]:
    realm = Resource(REALM, "main", {}, T0)
    return {REALM: RealmTarget(realm, None, None, client_namespaces)}


def resource(ns: str = "team-a", name: str = "audit", created: int = 0, **spec: Any) -> Resource:
    return cs.scope_resource(k8s(ns, name, created, **spec), targets(frozenset({"team-b"})))


def stored(r: Resource, remote: str, **edits: Any) -> Obj:
    """The scope as Keycloak returns it after the operator wrote `r`, with `edits` made by hand."""
    body = {**cs.upsert_body(Create(r.key, r.content, content_hash(r.content))), "id": remote, **edits}
    body["protocolMappers"] = [
        {**m, "id": f"m-{m['name']}", "config": {**m["config"], cs.client_parts.MAPPER_HASH: content_hash(m)}}
        for m in r.content.get(cs.MAPPERS, [])
    ]
    return body


def built_in(name: str, remote: str) -> Obj:
    return {"id": remote, "name": name, "protocol": "openid-connect", "attributes": {}}


def plan(rs: list[Resource], observed: list[Obj], **kw: Any) -> ScopePlan:
    return cs.plan_client_scopes(rs, observed, **kw)


# --- the model ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec",
    [
        {"name": "has space"},
        {"name": "a/b"},
        {"name": "-lead"},
        {"name": "x" * 256},
        {"name": "ok", "protocol": "cas"},
        {"name": "ok", "guiOrder": -1},
        {"name": "ok", "consentScreenText": "line\nbreak"},
        {"name": "ok", "protocol": "saml", "protocolMappers": [MAPPER]},
        {"name": "ok", "protocolMappers": [MAPPER, MAPPER]},
        {"name": "ok", "realm": {"name": "../x"}},
    ],
)
def test_hostile_or_inconsistent_specs_are_refused(spec: Obj) -> None:
    with pytest.raises(ValidationError):
        KeycloakClientScopeSpec.model_validate({"realm": {"name": "main"}, **spec})


@pytest.mark.parametrize("saml_mapper", ["saml-role-list-mapper", "saml-user-attribute-mapper"])
def test_a_scope_refuses_saml_mappers_in_the_model_and_the_crd(saml_mapper: str) -> None:
    # The operator's client scopes are OIDC only; the saml-* mapper types are a SAML client's.
    with pytest.raises(ValidationError, match="protocolMapper"):
        KeycloakClientScopeSpec.model_validate(
            {
                "realm": {"name": "main"},
                "name": "ok",
                "protocolMappers": [{**MAPPER, "protocolMapper": saml_mapper}],
            }
        )
    top = builders.crd_schema(names.CLIENT_SCOPE_KIND)
    mapper = top["spec"]["properties"]["protocolMappers"]["items"]["properties"]["protocolMapper"]
    assert saml_mapper not in mapper["enum"] and "oidc-sub-mapper" in mapper["enum"]


def test_the_content_sends_every_attribute_so_a_removed_one_is_cleared() -> None:
    content = resource(description="who did what", guiOrder=3, protocolMappers=[MAPPER]).content
    assert content["attributes"] == {
        "include.in.token.scope": "true",
        "display.on.consent.screen": "true",
        "consent.screen.text": "",
        "gui.order": "3",
    }
    assert resource().content["attributes"]["gui.order"] == ""
    assert cs.MAPPERS not in resource().content  # absent: not managed
    body = cs.upsert_body(Create(resource().key, content, content_hash(content)))
    assert cs.MAPPERS not in body  # written through their own endpoints
    marker = read_marker(body["attributes"])
    assert marker is not None and marker.key == ObjectKey(cs.KIND, "team-a", "audit")


# --- create, update, drift ----------------------------------------------------------------------------------


def test_a_new_scope_is_created_and_an_edited_spec_updates_the_same_object() -> None:
    r = resource()
    first = plan([r], [built_in("profile", "p1")])
    assert [c.key for c in first.plan.creates] == [r.key] and not first.plan.deletes
    changed = resource(description="now described")
    second = plan([changed], [stored(r, "s1")])
    assert [(u.key, u.remote_id) for u in second.plan.updates] == [(r.key, "s1")]
    assert cs.upsert_body(second.plan.updates[0])["id"] == "s1"
    assert second.drift == {}  # a spec change, not a hand edit


def test_a_quiet_plan_is_empty_and_a_hand_edit_is_repaired_naming_the_fields() -> None:
    r = resource(consentScreenText="Audit trail")
    assert plan([r], [stored(r, "s1")]).plan.is_empty()
    edited = stored(r, "s1", description="hijacked")
    edited["attributes"] = {**edited["attributes"], "consent.screen.text": "changed"}
    scope = plan([r], [edited])
    assert [u.remote_id for u in scope.plan.updates] == ["s1"]
    assert scope.drift[r.key] == ["attributes.consent.screen.text", "description"]


def test_mappers_are_planned_like_a_clients_and_a_hand_made_one_is_a_conflict() -> None:
    r = resource(protocolMappers=[MAPPER])
    created = cs.plan_mappers(r.content, {"protocolMappers": []})
    assert [(w.operation, w.name) for w in created.writes] == [("create", "team")]
    in_step = stored(r, "s1")
    assert cs.plan_mappers(r.content, in_step).writes == []
    in_step["protocolMappers"][0]["config"]["claim.value"] = "b"
    assert [(w.operation, w.name) for w in cs.plan_mappers(r.content, in_step).ordered()] == [
        ("update", "team")
    ]
    by_hand = {"protocolMappers": [{"id": "h", "name": "team", "protocolMapper": "oidc-sub-mapper"}]}
    held = cs.plan_mappers(r.content, by_hand)
    assert held.writes == [] and held.conflicts == ["mapper team"]
    gone = cs.plan_mappers(resource(protocolMappers=[]).content, stored(r, "s1"))
    assert [(w.operation, w.name) for w in gone.writes] == [("delete", "team")]


# --- delete order, ownership, forbidden ---------------------------------------------------------------------


def test_removals_go_before_upserts() -> None:
    old = resource("team-a", "audit")
    new = resource("team-a", "logs")
    deleting = Resource(old.key, old.natural_key, old.content, T0, deleting=True, parent=REALM)
    scope = plan([new, deleting], [stored(old, "s1")])
    removals, upserts = scope.phases()
    assert removals == [Delete(old.key, "s1")]
    assert [(type(op), op.key) for op in upserts] == [(Create, new.key)]
    assert scope.finalizable == []  # freed once its delete went through (sync.settle)


def test_the_same_name_from_two_namespaces_goes_to_the_older_and_the_later_is_a_conflict() -> None:
    a, b = resource("team-a", "audit", created=0), resource("team-b", "audit", created=5)
    scope = plan([b, a], [])
    assert [c.key for c in scope.plan.creates] == [a.key]
    message = scope.verdicts[b.key].message
    assert scope.verdicts[b.key].phase == "Conflict" and "of another namespace" in message
    assert "team-a" not in message  # another namespace's object is named by kind only (issue 26, finding 6)
    # Once a holds it, a's object stays a's even if b is older: the holder keeps the name.
    b_older = resource("team-b", "audit", created=-5)
    held = plan([a, b_older], [stored(a, "s1")])
    assert held.plan.is_empty() and held.verdicts[b_older.key].phase == "Conflict"
    # Deleting the holder frees the name; b is not written before a's delete went through.
    a_deleting = Resource(a.key, "audit", a.content, T0, deleting=True, parent=REALM)
    freed = plan([a_deleting, b], [stored(a, "s1")])
    assert freed.plan.deletes == [Delete(a.key, "s1")] and freed.verdicts[b.key].phase == "Conflict"


def test_a_built_in_or_hand_made_scope_is_never_touched_and_its_name_is_a_conflict() -> None:
    profile = resource(name="profile")
    scope = plan([profile], [built_in("profile", "p1"), built_in("by-hand", "h1")])
    assert scope.plan.is_empty()
    assert "did not create" in scope.verdicts[profile.key].message
    # Not ours, so not an orphan: nothing declared deletes nothing unmarked.
    assert plan([], [built_in("by-hand", "h1")]).plan.is_empty()


def test_a_marker_of_another_kind_or_of_an_unwatched_namespace_is_left_alone() -> None:
    client_marked = {
        **built_in("x", "c1"),
        "attributes": marked({}, ObjectKey(names.CLIENT_KIND, "t", "x"))["attributes"],
    }
    other_ns = stored(resource("team-z", "audit"), "z1")
    assert plan([], [client_marked]).plan.is_empty()
    assert plan([], [other_ns], namespaces=frozenset({"team-a"})).plan.is_empty()
    assert [d.remote_id for d in plan([], [other_ns]).plan.deletes] == ["z1"]  # watched: an orphan


def test_a_namespace_the_realm_does_not_allow_is_forbidden_and_nothing_is_written() -> None:
    intruder = cs.scope_resource(k8s("team-c", "audit"), targets(frozenset({"team-b"})))
    assert intruder.problem is not None and intruder.problem.phase == "Forbidden"
    assert "client scopes from namespace team-c" in intruder.problem.message
    assert plan([intruder], []).plan.is_empty()
    missing = cs.scope_resource(k8s("team-a", "audit"), {})
    assert missing.problem is not None and missing.problem.reason == "RealmNotFound"


def test_a_forbidden_scope_is_never_disabled_and_is_deleted_after_twice_the_grace() -> None:
    r = resource()
    now = T0 + timedelta(hours=3)
    grace = Revocation(now, timedelta(hours=1))
    problem = cs.scope_resource(k8s("team-c", "audit"), targets()).problem
    within = Resource(
        r.key, "audit", r.content, T0, problem=problem, forbidden_since=now - timedelta(minutes=90)
    )
    kept = plan([within], [stored(r, "s1")], revocation=grace)
    assert kept.plan.is_empty() and kept.disables == []
    past = Resource(r.key, "audit", r.content, T0, problem=problem, forbidden_since=now - timedelta(hours=2))
    assert plan([past], [stored(r, "s1")], revocation=grace).plan.deletes == [Delete(r.key, "s1")]


def test_preserve_on_delete_releases_the_scope_and_empties_only_its_marker() -> None:
    r = resource(protocolMappers=[MAPPER])
    going = Resource(r.key, "audit", r.content, T0, deleting=True, preserve=True, parent=REALM)
    scope = plan([going], [stored(r, "s1")])
    assert scope.releases == [Release(r.key, "s1")] and scope.plan.is_empty()
    body = cs.release_body(stored(r, "s1"))
    assert read_marker(body["attributes"]) is None and cs.MAPPERS not in body
    assert {k: v for k, v in body["attributes"].items() if k not in MARKER_ATTRIBUTES} == {
        k: v for k, v in r.content["attributes"].items()
    }


# --- the property: a plan applied converges -----------------------------------------------------------------


_ids = itertools.count()


def apply(scope: ScopePlan, observed: list[Obj]) -> list[Obj]:
    """What Keycloak holds after the plan's writes, as the writer makes them (client_scopes.py)."""
    by_id = {o["id"]: copy.deepcopy(o) for o in observed}
    for phase in scope.phases():
        for op in phase:
            if isinstance(op, Delete):
                del by_id[op.remote_id]
            elif isinstance(op, Release):
                by_id[op.remote_id] = {**by_id[op.remote_id], **cs.release_body(by_id[op.remote_id])}
            elif isinstance(op, Disable):
                raise AssertionError("a client scope is never disabled")
            elif isinstance(op, Create):
                remote = f"new-{next(_ids)}"  # never an id Keycloak gave before
                by_id[remote] = {**cs.upsert_body(op), "id": remote}
            else:
                assert isinstance(op, Update)
                by_id[op.remote_id] = cs.upsert_body(op)
    return list(by_id.values())


names_ = st.sampled_from(["audit", "logs", "profile", "extra"])
declared = st.lists(
    st.tuples(st.sampled_from(["team-a", "team-b"]), names_, st.sampled_from(["", "x", "y"]), st.booleans()),
    max_size=6,
    unique_by=lambda t: (t[0], t[1]),
)
found = st.lists(
    st.tuples(st.sampled_from(["ours", "hand", "stale"]), st.sampled_from(["team-a", "team-b"]), names_),
    max_size=5,
    unique_by=lambda t: t[2],  # Keycloak keeps names unique in a realm
)


@settings(max_examples=200, deadline=None)
@given(declared, found)
def test_applying_a_plan_converges_and_a_second_plan_is_empty(
    wanted: list[tuple[str, str, str, bool]], existing: list[tuple[str, str, str]]
) -> None:
    rs = [
        resource(ns, name, created=i, description=text, includeInTokenScope=flag)
        for i, (ns, name, text, flag) in enumerate(wanted)
    ]
    observed: list[Obj] = []
    for i, (how, ns, name) in enumerate(existing):
        if how == "hand":
            observed.append(built_in(name, f"o-{i}"))
        else:
            obj = stored(resource(ns, name), f"o-{i}")
            if how == "stale":
                obj["description"] = "edited by hand"
            observed.append(obj)
    # A name its holder is about to give up is taken a round later (ownership.py): two plans at most.
    after, plans = observed, []
    for _ in range(3):
        plans.append(plan(rs, after))
        if plans[-1].plan.is_empty():
            break
        after = apply(plans[-1], after)
    last = plans[-1]
    assert len(plans) <= 3 and last.plan.is_empty() and last.releases == [] and last.drift == {}
    # Unmarked objects are never touched; each name ends held by exactly one of its live claims (none when
    # made by hand), written as declared, and every other claim is a Conflict with nothing in Keycloak.
    hand = [o for o in observed if read_marker(o.get("attributes")) is None]
    assert all(o in after for o in hand)
    held_by_hand = {o["name"] for o in hand}
    for name in {r.natural_key for r in rs}:
        phases = sorted(last.verdicts[r.key].phase for r in rs if r.natural_key == name)
        ready = 0 if name in held_by_hand else 1
        assert phases == ["Conflict"] * (len(phases) - ready) + ["Ready"] * ready
    for r in rs:
        ours = [o for o in after if (m := read_marker(o.get("attributes"))) is not None and m.key == r.key]
        assert len(ours) == (1 if last.verdicts[r.key].phase == "Ready" else 0)
