"""The group kind's pure planner (core/replication/group.py): create, update, drift repair, delete order
(subgroups first), conflicts, client roles out of reach, preserve, unmarked groups left alone, cycles, and a
property: applying a plan to what Keycloak holds converges, so a second plan over the result is empty."""

from __future__ import annotations

import copy
import functools
import itertools
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from keycloak_operator.core.replication import ObjectKey, content_hash, group_tree, read_marker
from keycloak_operator.core.replication import group as gr
from keycloak_operator.core.replication import token_authority as ta
from keycloak_operator.core.replication.marker import MARKER_ATTRIBUTES
from keycloak_operator.core.replication.plan import Create, Delete, Update
from keycloak_operator.core.replication.resources import RealmTarget
from keycloak_operator.core.replication.sync import Release, Resource, Revocation, ScopePlan, Verdict
from keycloak_operator.kernel import names
from keycloak_operator.models.group import KeycloakGroupSpec

T0 = datetime(2026, 1, 1, tzinfo=UTC)
REALM = ObjectKey(names.REALM_KIND, "team-a", "main")
Obj = dict[str, Any]
PLAIN = {n: {"id": n, "name": n, "composite": False} for n in ("reader", "writer", "offline_access")}
# The clients in Keycloak and the namespace their marker names (realm-management: Keycloak's, unmarked).
OWNERS = {"app": ("c-app", "team-a"), "other": ("c-other", "team-b"), "realm-management": ("c-rm", None)}
AUTHORITY = functools.partial(
    ta.Authority, grants=(), granted_by="team-a/main", view=ta.RealmView("main", PLAIN, OWNERS)
)
AVAILABLE = gr.Available(
    frozenset({"reader", "writer", "offline_access"}),
    {"app": frozenset({"view", "edit"}), "other": frozenset({"view"})},
    {"team-a": frozenset({"app", "later"}), "team-b": frozenset({"other"})},
    AUTHORITY,
)


def k8s(ns: str, resource_name: str, created: int = 0, **spec: Any) -> Obj:
    """A KeycloakGroup `ns/name` in realm team-a/main; the group's name is `name` unless given."""
    body = {"realm": {"name": "main", "namespace": "team-a"}, "name": resource_name, **spec}
    stamp = (T0 + timedelta(seconds=created)).strftime("%Y-%m-%dT%H:%M:%SZ")
    meta = {"namespace": ns, "name": resource_name, "creationTimestamp": stamp}
    return {"kind": gr.KIND, "metadata": meta, "spec": body}


def targets() -> dict[ObjectKey, RealmTarget]:
    return {REALM: RealmTarget(Resource(REALM, "main", {}, T0), None, None, frozenset({"team-b"}))}


def resource(ns: str = "team-a", name: str = "eng", created: int = 0, **spec: Any) -> Resource:
    return gr.group_resource(k8s(ns, name, created, **spec), targets())


def plan(
    rs: list[Resource], observed: list[Obj], available: gr.Available = AVAILABLE, **kw: Any
) -> tuple[ScopePlan, dict[ObjectKey, Resource]]:
    scope, planned = gr.plan_groups(rs, observed, available, **kw)
    return scope, {g.key: g for g in planned}


def stored(g: Resource, remote: str, parent_id: str | None = None, **edits: Any) -> Obj:
    """The group as Keycloak lists it after the operator wrote the planned `g`, with `edits` made by hand."""
    body = gr.upsert_body(Create(g.key, g.content, content_hash(g.content)))
    obj = {**body, "id": remote, "path": g.content[gr.PATH], "subGroupCount": 0}
    obj |= {"realmRoles": list(g.content[gr.REALM_ROLES]), "clientRoles": dict(g.content[gr.CLIENT_ROLES])}
    if parent_id:
        obj["parentId"] = parent_id
    return {**obj, **edits}


def hand_made(name: str, remote: str, path: str | None = None, parent_id: str | None = None) -> Obj:
    obj = {"id": remote, "name": name, "path": path or f"/{name}", "attributes": {"x": ["1"]}}
    return {**obj, "parentId": parent_id} if parent_id else obj


def tree() -> list[Resource]:
    return [
        resource(name="eng", attributes={"cost-center": ["42"]}, realmRoles=["reader"]),
        resource(name="backend", parent="eng", realmRoles=["writer"], clientRoles={"app": ["view"]}),
    ]


def in_keycloak(rs: list[Resource]) -> list[Obj]:
    """The tree as the operator wrote it: eng (g-eng) and its subgroup backend (g-backend)."""
    _, planned = plan(rs, [])
    eng, backend = planned[rs[0].key], planned[rs[1].key]
    return [stored(eng, "g-eng"), stored(backend, "g-backend", "g-eng")]


# --- the model ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec",
    [
        {"name": "a/b"},
        {"name": "line\nbreak"},
        {"name": "x" * 256},
        {"name": " "},  # blank
        {"name": " eng"},
        {"name": "eng\u00a0"},
        {"name": "a\u2215b"},  # lookalike slashes
        {"name": "a\uff0fb"},
        {"name": "a\u2044b"},
        {"name": "ad\u202emin"},  # bidi override
        {"name": "ad\u200bmin"},  # zero-width
        {"name": "a\u0085b"},  # C1 control
        {"name": "ok", "attributes": {"a": ["x" * 256]}},  # GROUP_ATTRIBUTE.VALUE is varchar(255)
        {"name": "ok", "parent": "../x"},
        {"name": "ok", "attributes": {"kcop.dev.kind": ["KeycloakClient"]}},
        {"name": "ok", "attributes": {"has space": ["1"]}},
        {"name": "ok", "attributes": {"a": ["1", "1"]}},
        {"name": "ok", "attributes": {"a": []}},
        {"name": "ok", "attributes": {f"k{i}": ["v"] for i in range(33)}},
        {"name": "ok", "realmRoles": ["reader", "reader"]},
        {"name": "ok", "clientRoles": {"two words": ["view"]}},
        {"name": "ok", "clientRoles": {"app": ["view", "view"]}},
    ],
)
def test_hostile_or_inconsistent_specs_are_refused(spec: Obj) -> None:
    with pytest.raises(ValidationError):
        KeycloakGroupSpec.model_validate({"realm": {"name": "main"}, **spec})


@pytest.mark.parametrize("name", ["eng", "two words", "Åström 技术", "x" * 255])
def test_names_of_any_script_with_inner_spaces_are_fine(name: str) -> None:
    spec = KeycloakGroupSpec.model_validate(
        {"realm": {"name": "main"}, "name": name, "attributes": {"a": ["v" * 255]}}
    )
    assert spec.name == name


def test_the_body_carries_name_and_attributes_as_lists_with_the_marker_and_nothing_else() -> None:
    _, planned = plan(tree(), [])
    backend = planned[ObjectKey(gr.KIND, "team-a", "backend")]
    assert backend.natural_key == "/eng/backend" and backend.content[gr.PATH] == "/eng/backend"
    body = gr.upsert_body(Create(backend.key, backend.content, content_hash(backend.content)))
    assert set(body) == {"name", "attributes"}  # roles and the parent go through their own calls
    assert all(isinstance(v, list) for v in body["attributes"].values())  # Keycloak refuses a plain string
    marker = read_marker(body["attributes"])
    assert marker is not None and marker.key == backend.key


# --- create, update, drift ----------------------------------------------------------------------------------


def test_a_tree_is_created_parent_first_and_a_quiet_plan_is_empty() -> None:
    rs = tree()
    scope, _ = plan(rs, [hand_made("admins", "h1")])
    order = [[c.key.name for c in stage.plan.creates] for stage in gr.stages(scope, {})]
    assert order == [["eng"], ["backend"]]
    assert {v.phase for v in scope.verdicts.values()} == {"Ready"}
    quiet, planned = plan(rs, in_keycloak(rs))
    assert quiet.plan.is_empty() and quiet.drift == {}
    assert all(
        gr.plan_role_mappings(g.content, o) == []
        for g, o in zip(planned.values(), in_keycloak(rs), strict=True)
    )


def test_an_edited_spec_updates_the_same_object_and_a_new_parent_moves_it() -> None:
    rs = tree()
    changed = [rs[0], resource(name="backend", attributes={"tier": ["2"]}, realmRoles=["writer"])]
    scope, planned = plan(changed, in_keycloak(rs))
    assert [(u.key.name, u.remote_id) for u in scope.plan.updates] == [("backend", "g-backend")]
    assert scope.drift == {}  # a spec change, not a repair
    assert planned[changed[1].key].content[gr.PATH] == "/backend"  # now at the top: the writer moves it
    assert gr.upsert_body(scope.plan.updates[0])["id"] == "g-backend"


def test_hand_edits_are_repaired_naming_the_fields_and_role_mappings_are_exact() -> None:
    rs = tree()
    eng, backend = in_keycloak(rs)
    eng["attributes"] = {**eng["attributes"], "cost-center": ["7"], "added": ["by hand"]}
    backend["realmRoles"] = ["writer", "offline_access"]
    backend["clientRoles"] = {"app": ["edit"], "realm-management": ["view-users"]}
    scope, planned = plan(rs, [eng, backend])
    assert [u.key.name for u in scope.plan.updates] == ["eng"]
    assert scope.drift[rs[0].key] == ["attributes.added", "attributes.cost-center"]
    writes = gr.plan_role_mappings(planned[rs[1].key].content, backend)
    assert [(w.operation, w.client, w.roles) for w in writes] == [
        ("remove", None, ("offline_access",)),
        ("remove", "app", ("edit",)),
        ("remove", "realm-management", ("view-users",)),
        ("add", "app", ("view",)),
    ]


def test_a_group_moved_by_hand_is_moved_back() -> None:
    rs = tree()
    eng, backend = in_keycloak(rs)
    moved = {k: v for k, v in backend.items() if k != "parentId"} | {"path": "/backend"}
    scope, _ = plan(rs, [eng, moved])
    assert [u.key.name for u in scope.plan.updates] == ["backend"]
    assert scope.drift[rs[1].key] == ["path"]


# --- delete order, blocked deletes --------------------------------------------------------------------------


def test_a_tree_no_longer_declared_is_deleted_subgroups_first() -> None:
    observed = in_keycloak(tree())
    scope, _ = plan([], observed)
    by_id = {o["id"]: o for o in observed}
    order = [[d.remote_id for d in stage.plan.deletes] for stage in gr.stages(scope, by_id)]
    assert order == [["g-backend"], ["g-eng"]]


def test_a_deleting_parent_waits_for_its_declared_subgroups_and_for_hand_made_ones() -> None:
    rs = tree()
    observed = in_keycloak(rs)
    parent_going = [replace(rs[0], deleting=True), rs[1]]
    scope, _ = plan(parent_going, observed)
    assert scope.plan.deletes == [] and scope.verdicts[rs[0].key].phase == "Deleting"
    assert "backend" in scope.verdicts[rs[0].key].message
    # Its subgroup gone from the spec, but a hand-made one under it in Keycloak: still waits, untouched.
    alone = [replace(rs[0], deleting=True)]
    extra = hand_made("manual", "h1", "/eng/manual", "g-eng")
    scope, _ = plan(alone, [observed[0], extra])
    assert scope.plan.deletes == [] and "/eng/manual" in scope.verdicts[rs[0].key].message


def test_an_orphan_holding_a_hand_made_or_another_namespaces_subgroup_is_never_deleted() -> None:
    observed = in_keycloak(tree())  # nothing declares them any more: orphans
    manual = hand_made("manual", "h1", "/eng/backend/manual", "g-backend")
    scope, _ = plan([], [*observed, manual])
    assert [d.remote_id for d in scope.plan.deletes] == []  # /eng holds it too, further down
    # Another namespace's group, moved under ours by hand, is not ours to take along either.
    theirs = plan([resource("team-b", "ops")], [])[1][ObjectKey(gr.KIND, "team-b", "ops")]
    moved = stored(theirs, "g-b", "g-backend") | {"path": "/eng/backend/ops"}
    scope, _ = plan([resource("team-b", "ops")], [*observed, moved])
    assert scope.plan.deletes == []
    held = group_tree.below([*observed, moved], frozenset())
    assert {i: (b.hand, b.others, b.wanted) for i, b in held.items()} == {
        "g-backend": ([], 1, []),
        "g-eng": ([], 1, []),
    }


def _ids_and_parents(objs: list[Obj]) -> dict[str, str | None]:
    return {o["id"]: o.get("parentId") for o in objs}


def test_a_group_reparented_away_from_a_parent_deleted_in_the_same_apply_is_kept() -> None:
    # (A) backend moved to the top and eng deleted in one apply: Keycloak would take backend along with eng.
    rs = tree()
    observed = in_keycloak(rs)
    top = resource(name="backend", realmRoles=["writer"], clientRoles={"app": ["view"]})
    wanted = [replace(rs[0], deleting=True), top]
    scope, planned = plan(wanted, observed)
    assert scope.plan.deletes == [] and scope.verdicts[rs[0].key].phase == "Deleting"
    assert (
        "still wanted" in scope.verdicts[rs[0].key].message and "backend" in scope.verdicts[rs[0].key].message
    )
    after = apply(scope, planned, observed)
    assert _ids_and_parents(after) == {"g-eng": None, "g-backend": None}  # moved out, same id
    scope, planned = plan(wanted, after)
    assert [d.remote_id for d in scope.plan.deletes] == ["g-eng"]
    assert _ids_and_parents(apply(scope, planned, after)) == {"g-backend": None}


def test_a_group_moved_by_hand_under_a_deleting_one_is_moved_back_before_that_one_goes() -> None:
    # (B) backend declared under ops, moved by hand under eng; then eng is deleted.
    eng, ops, backend = resource(name="eng"), resource(name="ops"), resource(name="backend", parent="ops")
    _, p = plan([eng, ops, backend], [])
    observed = [
        stored(p[eng.key], "g-eng"),
        stored(p[ops.key], "g-ops"),
        stored(p[backend.key], "g-b", "g-eng") | {"path": "/eng/backend"},
    ]
    wanted = [replace(eng, deleting=True), ops, backend]
    scope, planned = plan(wanted, observed)
    assert scope.plan.deletes == [] and scope.verdicts[eng.key].phase == "Deleting"
    after = apply(scope, planned, observed)
    assert _ids_and_parents(after)["g-b"] == "g-ops"
    scope, planned = plan(wanted, after)
    assert [d.remote_id for d in scope.plan.deletes] == ["g-eng"]


def test_an_orphan_holding_a_group_still_declared_waits_until_it_moved_out() -> None:
    # (C) nothing declares eng any more, but its subgroup backend is declared, now at the top.
    observed = in_keycloak(tree())
    top = resource(name="backend", realmRoles=["writer"], clientRoles={"app": ["view"]})
    scope, planned = plan([top], observed)
    assert scope.plan.deletes == []
    after = apply(scope, planned, observed)
    scope, planned = plan([top], after)
    assert [d.remote_id for d in scope.plan.deletes] == ["g-eng"]


def test_a_deleting_group_holding_another_namespaces_group_counts_it_and_never_names_it() -> None:
    rs = tree()
    observed = in_keycloak(rs)
    theirs = plan([resource("team-b", "spies")], [])[1][ObjectKey(gr.KIND, "team-b", "spies")]
    moved = stored(theirs, "g-s", "g-eng") | {"path": "/eng/spies"}
    gone = [replace(rs[0], deleting=True), replace(rs[1], deleting=True), resource("team-b", "spies")]
    scope, _ = plan(gone, [*observed, moved])
    message = scope.verdicts[rs[0].key].message
    assert "spies" not in message and "1 subgroup(s) of other namespaces" in message
    assert [d.remote_id for d in scope.plan.deletes] == ["g-backend"]


def test_removals_go_before_upserts() -> None:
    rs = tree()
    scope, _ = plan([rs[0]], [*in_keycloak(rs), hand_made("x", "h")])
    scope2, _ = plan([*rs, resource(name="ops")], in_keycloak(rs)[:1])
    assert [d.remote_id for d in scope.plan.deletes] == ["g-backend"]
    kinds = [type(op).__name__ for s in gr.stages(scope2, {}) for ph in s.phases() for op in ph]
    assert kinds == ["Create", "Create"]  # /ops and /eng/backend, by level
    mixed, _ = plan([rs[0], resource(name="ops")], in_keycloak(rs))
    ids = {o["id"]: o for o in in_keycloak(rs)}
    stage_ops = [[type(op) for ph in s.phases() for op in ph] for s in gr.stages(mixed, ids)]
    assert stage_ops == [[Delete], [Create]]


# --- conflicts, reach, preserve, cycles ---------------------------------------------------------------------


def test_an_unmarked_group_at_the_path_is_a_conflict_and_its_subgroups_wait() -> None:
    rs = tree()
    scope, _ = plan(rs, [hand_made("eng", "h1")])
    assert scope.verdicts[rs[0].key].phase == "Conflict"
    child = scope.verdicts[rs[1].key]
    assert (child.phase, child.reason) == ("Pending", "ParentNotReady") and "spec.parent" in child.message
    assert scope.plan.is_empty()  # the hand-made group is never touched, and nothing is created under it


def test_a_group_asking_to_adopt_is_refused_and_the_unmarked_group_is_never_touched() -> None:
    obj = k8s("team-a", "eng")
    obj["metadata"]["annotations"] = {names.ANNOTATION_ADOPT: "true"}
    asking = gr.group_resource(obj, targets())
    assert not asking.adopt and "not adopted yet" in asking.adopt_refused
    scope, _ = plan([asking], [hand_made("eng", "h1")])
    assert scope.plan.is_empty() and not scope.adopted and not scope.releases
    assert scope.verdicts[asking.key].phase == "Conflict"
    assert "not adopted: a group is not adopted yet" in scope.verdicts[asking.key].message
    # Its resource deleted (preserved or not): the unmarked group stays, and the finalizer goes at once.
    for preserve in (False, True):
        going = replace(asking, deleting=True, preserve=preserve)
        scope, _ = plan([going], [hand_made("eng", "h1")])
        assert scope.plan.is_empty() and not scope.releases and scope.finalizable == [asking.key]


def test_the_same_path_from_two_namespaces_goes_to_the_older_and_the_later_is_a_conflict() -> None:
    a, b = resource("team-a", "eng", created=1), resource("team-b", "eng", created=2)
    scope, _ = plan([b, a], [])
    assert [c.key for c in scope.plan.creates] == [a.key]
    message = scope.verdicts[b.key].message
    assert scope.verdicts[b.key].phase == "Conflict" and "a KeycloakGroup of another namespace" in message
    assert "team-a" not in message  # another namespace's object is named by kind only (issue 26, finding 6)
    # Deleting team-b's never touches team-a's object.
    held = plan([a], [])[1][a.key]
    going = replace(b, deleting=True)
    scope, _ = plan([a, going], [stored(held, "g-a")])
    assert scope.plan.is_empty() and b.key in scope.finalizable


@pytest.mark.parametrize(
    ("spec", "phase", "reason", "field"),
    [
        ({"clientRoles": {"other": ["view"]}}, "Forbidden", ta.NOT_GRANTED, "spec.clientRoles.other"),
        (
            {"clientRoles": {"realm-management": ["view-users"]}},
            "Forbidden",
            ta.NOT_GRANTED,
            "spec.clientRoles.realm-management",
        ),
        ({"clientRoles": {"later": ["view"]}}, "Pending", "ClientNotReady", "spec.clientRoles.later"),
        ({"clientRoles": {"app": ["admin"]}}, "Pending", "RoleNotFound", "spec.clientRoles.app"),
        ({"realmRoles": ["reader", "ghost"]}, "Pending", "RoleNotFound", "spec.realmRoles"),
    ],
)
def test_a_role_out_of_reach_or_missing_holds_the_group_with_nothing_written(
    spec: Obj, phase: str, reason: str, field: str
) -> None:
    r = resource(**spec)
    scope, _ = plan([r], [])
    verdict = scope.verdicts[r.key]
    assert (verdict.phase, verdict.reason) == (phase, reason) and field in verdict.message
    assert verdict.revocable is (reason != ta.NOT_GRANTED)  # out of reach: no revocation clock
    assert scope.plan.is_empty()
    # Its object, if any, is kept as it is (held), never deleted, however long ago it was refused.
    ok = plan([resource()], [])[1][r.key]
    grace = Revocation(T0 + timedelta(days=1), timedelta(hours=1))
    scope, _ = plan([replace(r, forbidden_since=T0)], [stored(ok, "g1")], revocation=grace)
    assert scope.plan.is_empty()


def test_a_namespace_the_realm_does_not_allow_is_forbidden_and_revoked_without_a_disable() -> None:
    intruder = resource("team-c", "eng")
    assert intruder.problem is not None and intruder.problem.phase == "Forbidden"
    assert "groups from namespace team-c" in intruder.problem.message
    assert plan([intruder], [])[0].plan.is_empty()
    # Its object, written while allowed: kept within twice the grace (never disabled), then deleted.
    ok = plan([resource("team-b", "eng")], [])[1][ObjectKey(gr.KIND, "team-b", "eng")]
    was = replace(ok, key=intruder.key)
    now = T0 + timedelta(hours=3)
    grace = Revocation(now, timedelta(hours=1))
    within = replace(intruder, forbidden_since=now - timedelta(minutes=90))
    kept, _ = plan([within], [stored(was, "g1")], revocation=grace)
    assert kept.plan.is_empty() and kept.disables == []
    past = replace(intruder, forbidden_since=now - timedelta(hours=2))
    assert plan([past], [stored(was, "g1")], revocation=grace)[0].plan.deletes == [Delete(intruder.key, "g1")]


def test_a_built_in_client_a_keycloakclient_of_the_namespace_names_is_still_out_of_reach() -> None:
    # team-a declares a KeycloakClient whose clientId is realm-management (a Conflict with Keycloak's own):
    # a group mapping its roles is Forbidden, never Pending on a client that will never be team-a's.
    declared = {**AVAILABLE.declared_clients, "team-a": frozenset({"app", "realm-management"})}
    available = gr.Available(AVAILABLE.realm_roles, AVAILABLE.client_roles, declared, AUTHORITY)
    r = resource(clientRoles={"realm-management": ["view-users"]})
    scope, _ = plan([r], [], available)
    verdict = scope.verdicts[r.key]
    assert (verdict.phase, verdict.reason) == ("Forbidden", ta.NOT_GRANTED) and not verdict.revocable
    assert "clientId: realm-management, roles: [view-users]" in verdict.message and scope.plan.is_empty()


def test_another_namespaces_group_may_not_map_team_a_client_roles() -> None:
    r = resource("team-b", "eng", clientRoles={"app": ["view"]})
    verdict = plan([r], [])[0].verdicts[r.key]
    assert verdict.reason == ta.NOT_GRANTED and "team-b" in verdict.message


def test_with_the_realm_owners_grant_a_group_maps_another_clients_role() -> None:
    # Groups ask the token authority as service accounts do: the grant opens exactly the role it names.
    grant = ta.Grant("team-a", "other", frozenset({"view"}))
    available = replace(AVAILABLE, authority=functools.partial(AUTHORITY, grants=(grant,)))
    r = resource(clientRoles={"other": ["view"]})
    scope, _ = plan([r], [], available)
    assert scope.verdicts[r.key].phase == "Ready" and len(scope.plan.creates) == 1
    refused = plan([resource(clientRoles={"other": ["view", "edit"]})], [], available)[0].verdicts[r.key]
    assert refused.phase == "Forbidden" and "roles: [edit]" in refused.message
    # Granted, and the client is not in the realm: it waits, naming the field.
    granted_ghost = ta.Grant("team-a", "ghost", frozenset({"view"}))
    available = replace(AVAILABLE, authority=functools.partial(AUTHORITY, grants=(granted_ghost,)))
    waiting = plan([resource(clientRoles={"ghost": ["view"]})], [], available)[0].verdicts[r.key]
    assert (waiting.phase, waiting.reason) == ("Pending", "RoleNotFound")
    assert "spec.clientRoles.ghost" in waiting.message


def test_a_group_holding_another_clients_role_without_a_grant_loses_it_and_keeps_its_own() -> None:
    held = {gr.REALM_ROLES: ["reader"], gr.CLIENT_ROLES: {"app": ["view"], "other": ["view"], "x": ["y"]}}
    writes = gr.refused_held(held, AUTHORITY("team-a"))
    assert [(w.operation, w.client, w.roles) for w in writes] == [
        ("remove", "other", ("view",)),
        ("remove", "x", ("y",)),
    ]
    grant = ta.Grant("team-a", "other", frozenset({"view"}))
    assert [w.client for w in gr.refused_held(held, AUTHORITY("team-a", grants=(grant,)))] == ["x"]


def test_preserve_on_delete_releases_the_group_and_drops_only_its_marker() -> None:
    rs = tree()
    observed = in_keycloak(rs)
    going = replace(rs[1], deleting=True, preserve=True)
    scope, _ = plan([rs[0], going], observed)
    assert scope.releases == [Release(rs[1].key, "g-backend")] and scope.plan.deletes == []
    body = gr.release_body(observed[1])
    assert not any(k in MARKER_ATTRIBUTES for k in body["attributes"]) and body["name"] == "backend"


def test_a_cycle_is_an_error_on_each_group_in_it_and_a_missing_parent_is_pending() -> None:
    a, b = resource(name="a", parent="b"), resource(name="b", parent="a")
    lost = resource(name="c", parent="nowhere")
    scope, _ = plan([a, b, lost], [])
    for r in (a, b):
        v = scope.verdicts[r.key]
        assert (v.phase, v.reason) == ("Error", "InvalidParent") and "spec.parent" in v.message
    v = scope.verdicts[lost.key]
    assert (v.phase, v.reason) == ("Pending", "ParentNotFound") and "spec.parent" in v.message
    assert scope.plan.is_empty()


def test_a_group_in_a_cycle_deleted_while_the_other_still_names_it_waits_then_goes() -> None:
    a, b = resource(name="a"), resource(name="b", parent="a")
    observed = [stored(plan([a], [])[1][a.key], "g-a")]
    cyclic = [replace(resource(name="a", parent="b"), deleting=True), b]
    scope, _ = plan(cyclic, observed)
    assert scope.plan.is_empty() and scope.verdicts[a.key].phase == "Deleting"
    assert scope.verdicts[b.key].reason == "InvalidParent"
    scope, _ = plan(cyclic[:1], observed)  # b gone too: a is deleted, nothing held
    assert scope.plan.deletes == [Delete(a.key, "g-a")]


def test_a_marker_of_another_kind_or_of_an_unwatched_namespace_is_left_alone() -> None:
    _, planned = plan([resource("team-c", "eng")], [])
    theirs = stored(planned[ObjectKey(gr.KIND, "team-c", "eng")], "g-c")
    scope, _ = plan([], [theirs], namespaces=frozenset({"team-a"}))
    assert scope.plan.is_empty()


# --- the property: a plan applied converges -----------------------------------------------------------------

_ids = itertools.count()


def apply(scope: ScopePlan, planned: dict[ObjectKey, Resource], observed: list[Obj]) -> list[Obj]:
    """What Keycloak holds after the plan's writes, as the writer makes them (shell/replication/groups.py):
    stage by stage, a delete taking the subgroups along, then each Ready group's role mappings."""
    by_id = {o["id"]: copy.deepcopy(o) for o in observed}

    def drop(remote: str) -> None:
        for child in [i for i, o in by_id.items() if o.get("parentId") == remote]:
            drop(child)
        by_id.pop(remote, None)

    def place(remote: str, g: Resource) -> None:
        up = gr.parent_key(g)
        by_id[remote].pop("parentId", None)
        if up is not None:
            by_id[remote]["parentId"] = scope.remote_ids[up]

    def fails(op: Create | Update) -> bool:
        """Keycloak answers 404: the group (an update's) or its parent is not there (any more)."""
        up = gr.parent_key(planned[op.key])
        gone = isinstance(op, Update) and op.remote_id not in by_id
        return gone or (up is not None and scope.remote_ids.get(up) not in by_id)

    for stage in gr.stages(scope, by_id):
        for phase in stage.phases():
            for op in phase:
                if isinstance(op, Delete):
                    drop(op.remote_id)
                elif isinstance(op, Release):
                    by_id[op.remote_id] = {**by_id[op.remote_id], **gr.release_body(by_id[op.remote_id])}
                elif isinstance(op, (Create, Update)) and fails(op):
                    continue
                elif isinstance(op, Create):
                    remote = f"new-{next(_ids)}"
                    scope.remote_ids[op.key] = remote
                    by_id[remote] = {**gr.upsert_body(op), "id": remote, "realmRoles": [], "clientRoles": {}}
                    place(remote, planned[op.key])
                else:
                    assert isinstance(op, Update)
                    by_id[op.remote_id] = {**by_id[op.remote_id], **gr.upsert_body(op)}
                    place(op.remote_id, planned[op.key])
    for obj in by_id.values():  # Keycloak derives each path from the parents, as they are now
        at, segments = obj, []
        while at is not None and len(segments) <= len(by_id):
            segments.append(str(at["name"]))
            at = by_id.get(at.get("parentId") or "")
        obj["path"] = "/" + "/".join(reversed(segments))
    for key, g in planned.items():
        remote = scope.remote_ids.get(key)
        if scope.verdicts.get(key) is None or scope.verdicts[key].phase != "Ready" or remote not in by_id:
            continue
        assert remote is not None
        obj = by_id[remote]
        for w in gr.plan_role_mappings(g.content, obj):
            if w.client is None:
                have = set(obj.get("realmRoles") or [])
                obj["realmRoles"] = sorted(
                    have | set(w.roles) if w.operation == "add" else have - set(w.roles)
                )
            else:
                clients = dict(obj.get("clientRoles") or {})
                have = set(clients.get(w.client, []))
                clients[w.client] = sorted(
                    have | set(w.roles) if w.operation == "add" else have - set(w.roles)
                )
                obj["clientRoles"] = {c: r for c, r in clients.items() if r}
    return list(by_id.values())


NOT_PLANNED = Verdict("Pending", "")
names_ = st.sampled_from(["eng", "ops", "qa"])
declared = st.lists(
    st.tuples(
        st.sampled_from(["team-a", "team-b"]),
        names_,
        st.sampled_from([None, "eng", "ops"]),  # a parent, by resource name (itself or a cycle at times)
        st.sampled_from([[], ["reader"], ["writer", "reader"]]),
        st.sampled_from([{}, {"k": ["1"]}, {"k": ["2"], "j": ["x"]}]),
        st.sampled_from([False, False, True]),  # being deleted
    ),
    max_size=5,
    unique_by=lambda t: (t[0], t[1]),
)
found = st.lists(
    st.tuples(
        st.sampled_from(["ours", "hand", "edited"]),
        st.sampled_from(["team-a", "team-b"]),
        names_,
        st.sampled_from([None, None, 0, 1]),  # under an earlier one (nested, or moved there by hand)
    ),
    max_size=4,
    unique_by=lambda t: t[2],  # names unique in the whole start: paths are then unique too
)


@settings(max_examples=200, deadline=None)
@given(declared, found)
# A blocked delete (ops, qa still under it) whose own parent is in Conflict says Deleting, yet is not at its
# declared path: qa waits on it, never created under it (nor, once team-b holds /eng/ops, left created).
@example(
    [
        ("team-a", "ops", "eng", [], {}, True),
        ("team-b", "eng", None, [], {}, False),
        ("team-a", "eng", None, [], {}, False),
        ("team-a", "qa", "ops", [], {}, False),
    ],
    [("ours", "team-a", "ops", None)],
)
@example(
    [
        ("team-a", "ops", "eng", [], {}, True),
        ("team-b", "eng", None, [], {}, False),
        ("team-a", "eng", None, [], {}, False),
        ("team-a", "qa", "ops", [], {}, False),
        ("team-b", "ops", "eng", [], {}, False),
    ],
    [("ours", "team-a", "ops", None)],
)
# A blocked delete (team-b/eng, ops declared under it) whose path team-a holds: Deleting (the Conflict told
# after), its object kept, ops waiting on it.
@example(
    [
        ("team-a", "eng", None, [], {}, False),
        ("team-b", "eng", None, [], {}, True),
        ("team-b", "ops", "eng", [], {}, False),
    ],
    [("ours", "team-a", "ops", None), ("ours", "team-b", "eng", 0)],
)
def test_applying_a_plan_converges_and_a_second_plan_is_empty(
    wanted: list[tuple[str, str, str | None, list[str], Obj, bool]], existing: list[tuple[str, str, str]]
) -> None:
    rs = [
        replace(
            resource(
                ns, name, created=i, realmRoles=roles, attributes=attrs, **({"parent": up} if up else {})
            ),
            deleting=going,
        )
        for i, (ns, name, up, roles, attrs, going) in enumerate(wanted)
    ]
    observed: list[Obj] = []
    for i, (how, ns, name, under) in enumerate(existing):
        up = observed[under] if under is not None and under < i else None
        where = {"parentId": up["id"], "path": f"{up['path']}/{name}"} if up else {}
        if how == "hand":
            observed.append(hand_made(name, f"o-{i}") | where)
            continue
        parent = up and read_marker(up.get("attributes"))
        if parent and parent.key.namespace == ns:  # written by the operator there
            rp = [resource(ns, str(up["name"])), resource(ns, name, parent=parent.key.name)]
            g = plan(rp, [])[1][ObjectKey(gr.KIND, ns, name)]
        else:  # a top-level group of ours, moved there by hand (or left at the top)
            g = plan([resource(ns, name)], [])[1][ObjectKey(gr.KIND, ns, name)]
        obj = stored(g, f"o-{i}") | where
        if how == "edited":
            obj["attributes"] = {**obj["attributes"], "added": ["by hand"]}
            obj["realmRoles"] = ["offline_access"]
        observed.append(obj)
    # A declared group's object (one still wanted: not being deleted) keeps its id through every round:
    # never taken along by a parent's delete, so never recreated empty.
    wanted_ids = {
        o["id"]
        for o in observed
        if (m := read_marker(o.get("attributes"))) and any(r.key == m.key and not r.deleting for r in rs)
    }
    after, scopes = observed, []
    for _ in range(6):
        scope, planned = plan(rs, after)
        scopes.append(scope)
        mappings = [
            w
            for k, g in planned.items()
            if scope.verdicts.get(k, NOT_PLANNED).phase == "Ready" and k in scope.remote_ids
            for w in gr.plan_role_mappings(
                g.content, next(o for o in after if o["id"] == scope.remote_ids[k])
            )
        ]
        if scope.plan.is_empty() and not scope.releases and not mappings:
            break
        after = apply(scope, planned, after)
        assert wanted_ids <= {o["id"] for o in after}
    last = scopes[-1]
    # A move out of a deleting group, then its delete, then a quiet plan: a few rounds at most.
    assert len(scopes) < 6 and last.plan.is_empty() and last.drift == {}

    # Unmarked groups are never touched; each Ready group is in Keycloak exactly once, as declared; a held
    # one keeps what it had. (Its path is Keycloak's to derive: a group of ours moved above it changes it.)
    def unpathed(objs: list[Obj]) -> list[Obj]:
        return [{k: v for k, v in o.items() if k != "path"} for o in objs]

    hand = [o for o in observed if read_marker(o.get("attributes")) is None]
    assert all(o in unpathed(after) for o in unpathed(hand))
    _, planned = plan(rs, after)
    for r in rs:
        ours = [o for o in after if (m := read_marker(o.get("attributes"))) is not None and m.key == r.key]
        verdict = last.verdicts.get(r.key, NOT_PLANNED)
        if r.deleting and verdict.phase != "Deleting":  # not waiting on a subgroup: gone, finalizable
            assert ours == [] and r.key in last.finalizable
        elif verdict.phase == "Deleting":
            assert len(ours) <= 1  # waits, whole, for the subgroups declared under it
        elif verdict.phase == "Ready":
            assert len(ours) == 1 and ours[0]["path"] == planned[r.key].content[gr.PATH]
            assert gr.observed_attributes(ours[0]) == planned[r.key].content["attributes"]
        else:  # held (a cycle, a Conflict, waiting on its parent): its object, if any, exactly as it was
            before = [o for o in observed if (m := read_marker(o.get("attributes"))) and m.key == r.key]
            assert unpathed(ours) == unpathed(before)
