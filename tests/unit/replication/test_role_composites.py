"""A declared client role's composites (core/replication/role_composites.py): in the content only when
declared, read from Keycloak's answer, and planned under the grant rule of service-account roles."""

from __future__ import annotations

from typing import Any

from keycloak_operator.core.replication import client_parts as parts
from keycloak_operator.core.replication import role_composites as rc
from keycloak_operator.core.replication import service_account as sa
from keycloak_operator.kernel import names
from tests.unit.replication.test_service_account import GRANTED_BY, NS, RM, VIEW, VIEW_USERS, spec

WHERE = "spec.roles[reader].composites"
NOTHING = sa.Held()


def content(composites: dict[str, Any] | None) -> dict[str, Any]:
    role: dict[str, Any] = {"name": "reader"}
    if composites is not None:
        role["composites"] = composites
    return parts.settings_content(spec(roles=[role, {"name": "plain"}]))


def plan(
    composites: dict[str, Any], held: sa.Held = NOTHING, grants: tuple[sa.Grant, ...] = ()
) -> sa.MappingPlan:
    block = rc.declared(content(composites))["reader"]
    return rc.plan_composites("reader", block, NS, grants, GRANTED_BY, VIEW, held)


def test_composites_are_in_the_content_only_when_declared() -> None:
    assert content(None)[parts.ROLES] == [
        {"name": "plain", "description": ""},
        {"name": "reader", "description": ""},
    ]
    declared = rc.declared(content({"clients": {RM: ["view-users"]}, "realm": ["writer"]}))
    assert declared == {"reader": {"realm": ["writer"], "clients": {RM: ["view-users"]}}}


def test_keycloaks_answer_is_read_by_container() -> None:
    answer = [
        {"id": "r-writer", "name": "writer", "clientRole": False, "containerId": "realm-id"},
        {"id": "rm-view", "name": "view-users", "clientRole": True, "containerId": "c-rm"},
        {"id": "x-1", "name": "odd", "clientRole": True, "containerId": "gone"},
        {"name": "no-id"},
        "junk",
    ]
    held = rc.held_composites(answer, VIEW)
    assert held.realm == {"writer": "r-writer"}
    assert held.clients == {RM: ("c-rm", {"view-users": "rm-view"}), "unknown gone": ("gone", {"odd": "x-1"})}
    assert rc.held_composites(None, VIEW) == sa.Held()


def test_own_roles_and_realm_roles_need_no_grant() -> None:
    p = plan({"realm": ["writer"], "clients": {"api": ["call"]}})
    assert p.problem is None
    assert [w.labels() for w in p.ordered()] == [["realm/writer"], ["api/call"]]


def test_realm_management_needs_the_grant_and_the_message_names_the_role() -> None:
    p = plan({"clients": {RM: ["view-users"]}})
    assert p.problem is not None and p.problem.phase == "Forbidden" and p.writes == []
    assert f"{WHERE}.clients.{RM}" in p.problem.message and "spec.serviceAccountGrants" in p.problem.message
    granted = plan({"clients": {RM: ["view-users"]}}, grants=(VIEW_USERS,))
    assert granted.problem is None and [w.labels() for w in granted.writes] == [[f"{RM}/view-users"]]


def test_a_withdrawn_grant_and_an_unknown_client_are_removed_and_the_default_role_is_not_kept() -> None:
    held = sa.Held(
        {"default-roles-shop": "r-default"},
        {RM: ("c-rm", {"view-users": "rm-view"}), "unknown gone": ("gone", {"odd": "x-1"})},
    )
    p = plan({"clients": {RM: ["view-users"]}}, held)
    assert p.revoked == [f"{RM}/view-users"]
    assert sorted(label for w in p.writes for label in w.labels()) == [f"{RM}/view-users", "unknown gone/odd"]
    p = plan({"clients": {RM: ["view-users"]}}, held, (VIEW_USERS,))
    assert p.problem is None  # a composite is not a user: the realm's default role is no exception here
    assert sorted(label for w in p.writes for label in w.labels()) == [
        "realm/default-roles-shop",
        "unknown gone/odd",
    ]


def test_only_roles_the_operator_made_for_the_client_are_its_to_change() -> None:
    mine = {"attributes": {names.ROLE_OWNER_ATTRIBUTE: ["team/api"]}}
    answer = [
        {"name": "made", "composite": False, **mine},
        {"name": "wide", "composite": True, **mine},
        {"name": "unsaid", **mine},  # no `composite`: may have some
        {"name": "by-hand", "composite": True},
        "junk",
    ]
    assert rc.owned_roles(answer, "team/api") == {"made": False, "wide": True, "unsaid": True}
    assert rc.owned_roles({"not": "a list"}, "team/api") == {}
