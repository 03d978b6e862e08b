"""A client's service-account role mappings (core/replication/service_account.py): the content, who may map
what (realm roles and this namespace's clients freely, anything else only by the realm owner's grant), the
writes (create, drift repair, removal on a withdrawn grant, default roles untouched, an absent field writing
nothing), convergence as a property, and the model and CRD refusing what cannot work."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from keycloak_operator.core.replication import ObjectKey, marked
from keycloak_operator.core.replication import client as client_kind
from keycloak_operator.core.replication import service_account as sa
from keycloak_operator.core.replication.plan import Create
from keycloak_operator.core.replication.resources import realm_target
from keycloak_operator.kernel import names
from keycloak_operator.models import service_account as msa
from keycloak_operator.models.client import KeycloakClientSpec
from tests.unit import builders

NS = "team"
REALM = "Shop"
GRANTED_BY = "platform/shop"
RM = "realm-management"


def spec(**fields: Any) -> KeycloakClientSpec:
    return KeycloakClientSpec.model_validate(
        {"realm": {"name": "shop"}, "clientId": "web", "serviceAccountsEnabled": True, **fields}
    )


def content(realm: list[str] | None = None, clients: dict[str, list[str]] | None = None) -> dict[str, Any]:
    return client_kind.client_content(
        spec(serviceAccountRoles={"realm": realm or [], "clients": clients or {}})
    )


def marked_client(cid: str, uuid: str, namespace: str) -> dict[str, Any]:
    return {"id": uuid, **marked({"clientId": cid}, ObjectKey(names.CLIENT_KIND, namespace, cid))}


VIEW = sa.RealmView(
    REALM,
    {
        "default-roles-shop": {"id": "r-default", "description": sa.DEFAULT_ROLE_DESCRIPTION},
        "offline_access": {"id": "r-offline", "composite": False},
        "reader": {"id": "r-reader", "composite": False},
        "writer": {"id": "r-writer", "composite": False},
    },
    sa.client_owners(
        [
            {"id": "c-rm", "clientId": RM, "attributes": {}},
            {"id": "c-broker", "clientId": "broker"},
            marked_client("web", "c-web", NS),
            marked_client("api", "c-api", NS),
            marked_client("billing", "c-billing", "other"),
        ]
    ),
    {
        RM: {"view-users": "rm-view", "manage-users": "rm-manage"},
        "broker": {"read-token": "b-read"},
        "web": {"self": "w-self"},
        "api": {"call": "a-call"},
        "billing": {"pay": "bi-pay"},
    },
)
FRESH = sa.Held({"default-roles-shop": "r-default"})  # what Keycloak gives a new service account
VIEW_USERS = sa.Grant(NS, RM, frozenset({"view-users"}))


def plan(c: dict[str, Any], held: sa.Held = FRESH, grants: tuple[sa.Grant, ...] = ()) -> sa.MappingPlan:
    return sa.plan_mappings(c, NS, grants, GRANTED_BY, VIEW, held)


def test_content_is_sorted_and_absent_when_not_declared() -> None:
    assert sa.SA_ROLES not in client_kind.client_content(spec())
    c = content(["writer", "reader"], {RM: ["view-users"], "api": ["call"]})
    assert c[sa.SA_ROLES] == {"realm": ["reader", "writer"], "clients": {"api": ["call"], RM: ["view-users"]}}
    # Sub-objects never travel in the client's own PUT.
    assert sa.SA_ROLES not in client_kind.upsert_body(Create(ObjectKey(names.CLIENT_KIND, NS, "web"), c, "h"))


def test_an_absent_field_removes_only_what_needs_a_grant_and_lacks_one() -> None:
    held = sa.Held(
        {"reader": "r-reader", "default-roles-shop": "r-default"},
        {
            RM: ("c-rm", {"manage-users": "rm-manage", "view-users": "rm-view"}),
            "api": ("c-api", {"call": "a"}),
        },
    )
    p = plan(client_kind.client_content(spec()), held, (VIEW_USERS,))
    assert p.problem is None and p.revoked == [f"{RM}/manage-users"]
    assert p.writes == [sa.MappingWrite("remove", RM, "c-rm", (("rm-manage", "manage-users"),))]


def test_realm_roles_and_own_client_roles_are_mapped_without_a_grant() -> None:
    p = plan(content(["reader"], {"web": ["self"], "api": ["call"]}))
    assert p.problem is None
    assert p.ordered() == [
        sa.MappingWrite("add", None, None, (("r-reader", "reader"),)),
        sa.MappingWrite("add", "api", "c-api", (("a-call", "call"),)),
        sa.MappingWrite("add", "web", "c-web", (("w-self", "self"),)),
    ]
    assert p.writes[0].body() == [{"id": "r-reader", "name": "reader"}]


@pytest.mark.parametrize(
    ("cid", "role"),
    [(RM, "view-users"), ("broker", "read-token"), ("billing", "pay"), ("nowhere", "x")],
)
def test_a_role_of_realm_management_a_builtin_or_another_namespace_is_forbidden_without_a_grant(
    cid: str, role: str
) -> None:
    p = plan(content(["reader"], {cid: [role]}))
    assert p.writes == []  # nothing added, not even the realm role
    assert p.problem is not None and p.problem.phase == "Forbidden" and not p.problem.revocable
    assert p.problem.reason == sa.NOT_GRANTED
    message = p.problem.message
    assert f"spec.serviceAccountRoles.clients.{cid}" in message and role in message
    assert GRANTED_BY in message and f"namespace: {NS}" in message


def test_a_grant_of_the_realm_lets_the_role_be_mapped() -> None:
    p = plan(content(["reader"], {RM: ["view-users"]}), grants=(VIEW_USERS,))
    assert p.problem is None
    assert sa.MappingWrite("add", RM, "c-rm", (("rm-view", "view-users"),)) in p.writes


@pytest.mark.parametrize(
    "grant",
    [
        sa.Grant("other", RM, frozenset({"view-users"})),  # another namespace's grant
        sa.Grant(NS, RM, frozenset({"manage-users"})),  # another role
        sa.Grant(NS, "broker", frozenset({"view-users"})),  # another client
    ],
)
def test_a_grant_for_someone_or_something_else_does_not_count(grant: sa.Grant) -> None:
    p = plan(content([], {RM: ["view-users"]}), grants=(grant,))
    assert p.problem is not None and p.problem.reason == sa.NOT_GRANTED and p.writes == []


def test_declaring_a_client_named_realm_management_owns_nothing() -> None:
    """Ownership is the marker in Keycloak: realm-management there has none, whatever a namespace says."""
    assert sa.needs_grant(VIEW, RM, NS) and not sa.needs_grant(VIEW, "api", NS)
    assert sa.needs_grant(VIEW, "billing", NS) and not sa.needs_grant(VIEW, "billing", "other")


def test_only_the_realm_resources_own_grants_reach_the_planner() -> None:
    """Grants are read from the KeycloakRealm, in the realm's namespace; a client has no field for them."""
    realm = {
        "kind": names.REALM_KIND,
        "metadata": {"name": "shop", "namespace": "platform"},
        "spec": {
            "server": {"external": {"url": "https://sso.example.com", "adminSecret": {"name": "a"}}},
            "serviceAccountGrants": [{"namespace": NS, "clientId": RM, "roles": ["view-users"]}],
        },
    }
    assert realm_target(realm, {}).grants == (VIEW_USERS,)
    client = builders.crd_schema(names.CLIENT_KIND)["spec"]
    assert "serviceAccountGrants" not in client["properties"]  # pruned by the API server if sent


def test_a_withdrawn_grant_removes_the_mapping_and_says_so() -> None:
    held = sa.Held(
        {"default-roles-shop": "r-default", "reader": "r-reader"}, {RM: ("c-rm", {"view-users": "rm-view"})}
    )
    c = content(["reader"], {RM: ["view-users"]})
    assert plan(c, held, (VIEW_USERS,)) == sa.MappingPlan()  # in step while granted
    p = plan(c, held)
    assert p.problem is not None and p.problem.reason == sa.NOT_GRANTED
    assert p.writes == [sa.MappingWrite("remove", RM, "c-rm", (("rm-view", "view-users"),))]
    assert p.revoked == [f"{RM}/view-users"]
    after = sa.apply(held, p.writes)
    assert plan(c, after).writes == []  # then quiet, still Forbidden


def test_drift_is_repaired_and_hand_added_mappings_removed_but_never_the_default_role() -> None:
    c = content(["reader"], {RM: ["view-users"]})
    held = sa.Held(
        {"default-roles-shop": "r-default", "writer": "r-writer"},
        {RM: ("c-rm", {"manage-users": "rm-manage"}), "api": ("c-api", {"call": "a-call"})},
    )
    p = plan(c, held, (VIEW_USERS,))
    assert p.problem is None and p.revoked == []  # manage-users was never declared: drift, not revocation
    assert p.ordered() == [
        sa.MappingWrite("remove", "api", "c-api", (("a-call", "call"),)),
        sa.MappingWrite("remove", RM, "c-rm", (("rm-manage", "manage-users"),)),
        sa.MappingWrite("remove", None, None, (("r-writer", "writer"),)),
        sa.MappingWrite("add", None, None, (("r-reader", "reader"),)),
        sa.MappingWrite("add", RM, "c-rm", (("rm-view", "view-users"),)),
    ]
    assert p.changed() == [
        "api/call",
        f"{RM}/manage-users",
        f"{RM}/view-users",
        "realm/reader",
        "realm/writer",
    ]
    assert "default-roles-shop" in sa.apply(held, p.writes).realm


def test_the_default_role_is_known_by_its_description_too() -> None:
    view = sa.RealmView(
        "Shop", {"default-roles-shop-1": {"id": "d", "description": sa.DEFAULT_ROLE_DESCRIPTION}}, {}, {}
    )
    assert view.is_default("default-roles-shop-1") and view.is_default("default-roles-shop")
    assert not view.is_default("reader")


def test_a_role_the_realm_lacks_is_pending_and_nothing_is_added() -> None:
    p = plan(content(["ghost"]))
    assert p.problem is not None and p.problem.phase == "Pending" and p.problem.reason == sa.NOT_FOUND
    assert "spec.serviceAccountRoles.realm" in p.problem.message and "ghost" in p.problem.message
    p = plan(content([], {"api": ["ghost"]}))
    assert p.problem is not None and "spec.serviceAccountRoles.clients.api" in p.problem.message
    assert p.writes == []


def test_held_mappings_reads_keycloaks_answer_and_ignores_junk() -> None:
    answer = {
        "realmMappings": [{"id": "r-reader", "name": "reader"}, {"name": "no-id"}, "junk"],
        "clientMappings": {
            RM: {"id": "c-rm", "client": RM, "mappings": [{"id": "rm-view", "name": "view-users"}]},
            "bad": "junk",
        },
    }
    assert sa.held_mappings(answer) == sa.Held(
        {"reader": "r-reader"}, {RM: ("c-rm", {"view-users": "rm-view"})}
    )
    assert sa.held_mappings(None) == sa.Held() == sa.held_mappings([])


# --- convergence --------------------------------------------------------------------------------------------

REALM_ROLES = ["default-roles-shop", "offline_access", "reader", "writer"]
CLIENT_ROLES = [(cid, r) for cid, roles in VIEW.client_roles.items() for r in roles]
GRANTS = [sa.Grant(NS, cid, frozenset({r})) for cid, r in CLIENT_ROLES] + [
    sa.Grant("other", RM, frozenset({"view-users"}))
]


def _held(realm: set[str], client: set[tuple[str, str]]) -> sa.Held:
    clients: dict[str, tuple[str, dict[str, str]]] = {}
    for cid, r in client:
        clients.setdefault(cid, (VIEW.clients[cid][0], {}))[1][r] = VIEW.client_roles[cid][r]
    return sa.Held({r: str(VIEW.realm_roles[r]["id"]) for r in realm}, clients)


@given(
    want_realm=st.sets(st.sampled_from(REALM_ROLES[1:])),
    want_clients=st.sets(st.sampled_from(CLIENT_ROLES), max_size=4),
    held_realm=st.sets(st.sampled_from(REALM_ROLES)),
    held_clients=st.sets(st.sampled_from(CLIENT_ROLES), max_size=4),
    grants=st.sets(st.sampled_from(range(len(GRANTS)))),
)
def test_applying_the_plan_converges_and_never_leaves_an_ungranted_role(
    want_realm: set[str],
    want_clients: set[tuple[str, str]],
    held_realm: set[str],
    held_clients: set[tuple[str, str]],
    grants: set[int],
) -> None:
    clients: dict[str, list[str]] = {}
    for cid, r in want_clients:
        clients.setdefault(cid, []).append(r)
    c = content(sorted(want_realm), clients)
    given_grants = tuple(GRANTS[i] for i in sorted(grants))
    before = _held(held_realm, held_clients)
    first = plan(c, before, given_grants)
    after = sa.apply(before, first.ordered())
    second = plan(c, after, given_grants)
    assert second.writes == [] and second.problem == first.problem
    assert ("default-roles-shop" in after.realm) == ("default-roles-shop" in before.realm)
    for cid, (_, roles) in after.clients.items():  # whatever happened, nothing ungranted is left
        assert all(not sa.needs_grant(VIEW, cid, NS) or sa.granted(given_grants, NS, cid, r) for r in roles)
    if first.problem is None:
        assert set(after.realm) - {"default-roles-shop"} == want_realm
        assert {(cid, r) for cid, (_, roles) in after.clients.items() for r in roles} == want_clients


# --- model and CRD -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [
        {"serviceAccountsEnabled": False, "serviceAccountRoles": {"realm": ["reader"]}},
        {"publicClient": True, "serviceAccountRoles": {}},
        {"serviceAccountRoles": {"realm": ["a", "a"]}},
        {"serviceAccountRoles": {"clients": {"has space": ["a"]}}},
        {"serviceAccountRoles": {"clients": {RM: ["a"] * 65}}},
    ],
)
def test_the_model_refuses_what_cannot_work(fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        spec(**fields)


def test_the_crd_states_the_rules_the_model_checks() -> None:
    client = builders.crd_schema(names.CLIENT_KIND)["spec"]
    rules = [r["rule"] for r in client["x-kubernetes-validations"]]
    assert any("serviceAccountRoles" in r and "serviceAccountsEnabled" in r for r in rules)
    clients = client["properties"]["serviceAccountRoles"]["properties"]["clients"]
    assert "patternProperties" not in clients and clients["x-kubernetes-validations"]
    realm = builders.crd_schema(names.REALM_KIND)["spec"]
    grants = realm["properties"]["serviceAccountGrants"]
    assert grants["maxItems"] == 256 and grants["items"]["required"] == ["namespace"]
    # A grant names roles, claims or both; the model refuses an empty one as the API server does.
    assert grants["items"]["x-kubernetes-validations"] == [msa.GRANT_RULE]
    with pytest.raises(ValidationError, match="a grant names roles or claims"):
        msa.ServiceAccountGrant.model_validate({"namespace": "a"})


def test_a_malformed_answer_is_absent_never_a_crash() -> None:
    assert sa.held_mappings({"clientMappings": ["x"], "realmMappings": {"a": 1}}) == sa.Held()
    assert sa.client_owners(["junk", None, {"clientId": RM}]) == {}


def test_a_composite_realm_role_needs_a_grant_the_default_role_excepted() -> None:
    composite = {**VIEW.realm_roles, "admin": {"id": "r-admin", "composite": True}, "odd": {"id": "r-odd"}}
    view = sa.RealmView(REALM, composite, VIEW.clients, VIEW.client_roles)
    assert view.realm_needs_grant("admin") and view.realm_needs_grant("odd")  # no `composite: false`
    assert not view.realm_needs_grant("reader") and not view.realm_needs_grant("default-roles-shop")
    p = sa.plan_mappings(content(["admin"]), NS, (), GRANTED_BY, view, FRESH)
    assert (
        p.problem is not None
        and "spec.serviceAccountRoles.realm: composite realm roles admin" in p.problem.message
    )
    grant = sa.Grant(NS, None, frozenset({"admin"}))
    p = sa.plan_mappings(content(["admin"]), NS, (grant,), GRANTED_BY, view, FRESH)
    assert p.problem is None and [w.labels() for w in p.writes] == [["realm/admin"]]


def test_uma_protection_of_the_own_client_is_kept_like_the_default_role() -> None:
    held = sa.Held(FRESH.realm, {"web": ("c-web", {"uma_protection": "w-uma"})})
    assert plan(content(["reader"]), held).writes[0].operation == "remove"  # another client's: not kept
    p = sa.plan_mappings(content(["reader"]), NS, (), GRANTED_BY, VIEW, held, own="c-web")
    assert [w.labels() for w in p.writes] == [["realm/reader"]]
