"""A client's optional settings (roles, protocol mappers, client scopes, PKCE, logout, token attributes):
the content, the sub-object planners (create, update, drift repair, delete order, conflicts, a steady state
writing nothing), convergence as a property, and hostile input refused by the model and the CRD."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from keycloak_operator.core.replication import ObjectKey, marked
from keycloak_operator.core.replication import client as client_kind
from keycloak_operator.core.replication import client_parts as parts
from keycloak_operator.core.replication.marker import content_hash
from keycloak_operator.core.replication.plan import Create, Update
from keycloak_operator.core.replication.sync import Resource
from keycloak_operator.kernel import names
from keycloak_operator.models.client import KeycloakClientSpec
from tests.unit import builders

KEY = ObjectKey(names.CLIENT_KIND, "team", "web")
OWNER = "team/web"
AUDIENCE = {
    "name": "aud",
    "protocolMapper": "oidc-audience-mapper",
    "config": {"included.custom.audience": "api", "access.token.claim": "true"},
}
CLAIM = {
    "name": "team",
    "protocolMapper": "oidc-hardcoded-claim-mapper",
    "config": {"claim.name": "team", "claim.value": "web"},
}
SCOPES = {"basic": "id-basic", "profile": "id-profile", "email": "id-email", "roles": "id-roles"}


def spec(**fields: Any) -> KeycloakClientSpec:
    return KeycloakClientSpec.model_validate({"realm": {"name": "main"}, "clientId": "web", **fields})


def content(**fields: Any) -> dict[str, Any]:
    return client_kind.client_content(spec(**fields))


def resource(**fields: Any) -> Resource:
    return Resource(KEY, "web", content(**fields), datetime(2026, 1, 1, tzinfo=UTC))


# --- the content --------------------------------------------------------------------------------------------


def test_no_settings_declared_keeps_the_content_it_had_before_they_existed() -> None:
    assert set(content()) == {
        "clientId", "name", "enabled", "protocol", "publicClient", "redirectUris", "webOrigins",
        "standardFlowEnabled", "directAccessGrantsEnabled", "serviceAccountsEnabled",
    }  # fmt: skip


def test_typed_fields_become_keycloak_attributes() -> None:
    c = content(
        pkceMethod="S256",
        logout={"backChannelUrl": "https://web.example.com/logout"},
        accessTokenLifespanSeconds=600,
        postLogoutRedirectUris=["https://b/", "https://a/"],
    )
    assert c["attributes"] == {
        "pkce.code.challenge.method": "S256",
        "backchannel.logout.url": "https://web.example.com/logout",
        "backchannel.logout.session.required": "true",
        "access.token.lifespan": "600",
        "post.logout.redirect.uris": "https://a/##https://b/",
    }
    assert c["frontchannelLogout"] is False  # Keycloak's default for a client made through the admin API


def test_client_writes_leave_the_sub_objects_to_their_own_endpoints() -> None:
    c = content(
        roles=[{"name": "r"}], protocolMappers=[AUDIENCE], defaultClientScopes=["basic"], pkceMethod="S256"
    )
    body = client_kind.upsert_body(Create(KEY, c, content_hash(c)))
    # A create names its scopes (Keycloak attaches exactly those, not the realm's defaults); roles and
    # mappers, and an update's scopes, go through their own endpoints.
    assert set(parts.SUBRESOURCES) & set(body) == {"defaultClientScopes"}
    update = client_kind.upsert_body(Update(KEY, "u-1", c, content_hash(c), "old"))
    assert not set(parts.SUBRESOURCES) & set(update)
    assert body["attributes"]["pkce.code.challenge.method"] == "S256"
    assert body["attributes"]["kcop.dev.kind"] == names.CLIENT_KIND


def test_a_hand_edited_attribute_is_drift_and_a_steady_client_plans_nothing() -> None:
    r = resource(pkceMethod="S256", protocolMappers=[AUDIENCE])
    observed = {**marked(r.content, KEY), "id": "u-1"}
    observed = {k: v for k, v in observed.items() if k not in parts.SUBRESOURCES}
    steady = client_kind.plan_clients([r], [observed])
    assert steady.plan.operations() == [] and steady.drift == {}
    edited = copy.deepcopy(observed)
    edited["attributes"]["pkce.code.challenge.method"] = "plain"
    scope = client_kind.plan_clients([r], [edited])
    assert scope.drift[KEY] == ["attributes.pkce.code.challenge.method"]
    assert [op.key for op in scope.plan.updates] == [KEY]


# --- protocol mappers ---------------------------------------------------------------------------------------


def as_keycloak_holds(body: dict[str, Any], remote_id: str) -> dict[str, Any]:
    """A mapper as Keycloak returns it: with an id and a config key of its own added."""
    return {**body, "id": remote_id, "config": {**body["config"], "introspection.token.claim": "true"}}


def test_mappers_created_then_steady_with_keys_keycloak_adds() -> None:
    c = content(protocolMappers=[CLAIM, AUDIENCE])
    plan = parts.plan_mappers(c, [])
    assert [(w.operation, w.name) for w in plan.ordered()] == [("create", "aud"), ("create", "team")]
    observed = [as_keycloak_holds(dict(w.body or {}), f"m-{w.name}") for w in plan.writes]
    assert parts.plan_mappers(c, observed).writes == []


def test_a_changed_or_hand_edited_mapper_is_updated_by_id() -> None:
    c = content(protocolMappers=[CLAIM])
    observed = [as_keycloak_holds(parts.mapper_body(c["protocolMappers"][0]), "m-1")]
    edited = copy.deepcopy(observed)
    edited[0]["config"]["claim.value"] = "hijacked"  # the hash kept: a hand edit
    plan = parts.plan_mappers(c, edited)
    assert [(w.operation, w.remote_id) for w in plan.writes] == [("update", "m-1")]
    assert plan.writes[0].body is not None and plan.writes[0].body["config"]["claim.value"] == "web"
    changed = content(protocolMappers=[{**CLAIM, "config": {"claim.name": "team"}}])  # a key removed
    assert [w.operation for w in parts.plan_mappers(changed, observed).writes] == ["update"]


def test_only_the_operators_mappers_are_deleted_and_deletes_come_first() -> None:
    c = content(protocolMappers=[AUDIENCE])
    ours = as_keycloak_holds(parts.mapper_body(content(protocolMappers=[CLAIM])["protocolMappers"][0]), "m-1")
    by_hand = {"id": "m-2", "name": "by-hand", "protocolMapper": "oidc-sub-mapper", "config": {}}
    plan = parts.plan_mappers(c, [by_hand, ours])
    assert [(w.operation, w.name) for w in plan.ordered()] == [("delete", "team"), ("create", "aud")]
    assert plan.ordered()[0].remote_id == "m-1"


def test_a_declared_mapper_name_held_by_a_hand_made_one_is_a_conflict_left_alone() -> None:
    c = content(protocolMappers=[CLAIM])
    by_hand = {"id": "m-2", "name": "team", "protocolMapper": "oidc-sub-mapper", "config": {}}
    plan = parts.plan_mappers(c, [by_hand])
    assert plan.writes == [] and plan.conflicts == ["mapper team"]


def test_absent_mappers_are_not_managed() -> None:
    ours = as_keycloak_holds(parts.mapper_body(content(protocolMappers=[CLAIM])["protocolMappers"][0]), "m-1")
    assert parts.plan_mappers(content(), [ours]).writes == []


# --- client roles -------------------------------------------------------------------------------------------


def test_client_roles_create_update_delete_own_only() -> None:
    c = content(roles=[{"name": "reader"}, {"name": "writer", "description": "w"}])
    observed = [
        {"name": "writer", "description": "old", "attributes": {names.ROLE_OWNER_ATTRIBUTE: [OWNER]}},
        {"name": "gone", "attributes": {names.ROLE_OWNER_ATTRIBUTE: [OWNER]}},
        {"name": "by-hand"},
    ]
    plan = parts.plan_client_roles(c, observed, OWNER)
    assert [(w.operation, w.name) for w in plan.ordered()] == [
        ("delete", "gone"),
        ("create", "reader"),
        ("update", "writer"),
    ]
    conflict = parts.plan_client_roles(content(roles=[{"name": "by-hand"}]), observed, OWNER)
    assert conflict.conflicts == ["role by-hand"]
    assert parts.plan_client_roles(content(), observed, OWNER).writes == []  # absent: not managed


# --- client scopes ------------------------------------------------------------------------------------------


def test_a_missing_scope_is_reported_naming_the_field() -> None:
    verdict = parts.missing_scopes(content(optionalClientScopes=["nope"]), SCOPES)
    assert verdict is not None and verdict.reason == "ClientScopeNotFound"
    assert "spec.optionalClientScopes" in verdict.message and "'nope'" in verdict.message
    assert parts.missing_scopes(content(defaultClientScopes=["basic"]), SCOPES) is None


def test_scopes_are_the_exact_declared_sets_detached_before_attached() -> None:
    c = content(defaultClientScopes=["basic", "profile"], optionalClientScopes=["email"])
    observed = {"defaultClientScopes": ["basic", "email", "roles"], "optionalClientScopes": ["profile"]}
    plan = parts.plan_scopes(c, observed, SCOPES)
    assert [(w.part, w.operation, w.name) for w in plan.ordered()] == [
        ("default-scope", "delete", "email"),
        ("default-scope", "delete", "roles"),
        ("optional-scope", "delete", "profile"),
        ("default-scope", "create", "profile"),
        ("optional-scope", "create", "email"),
    ]
    steady = {"defaultClientScopes": ["profile", "basic"], "optionalClientScopes": ["email"]}
    assert parts.plan_scopes(c, steady, SCOPES).writes == []
    assert parts.plan_scopes(content(), observed, SCOPES).writes == []  # absent: not managed


# --- convergence --------------------------------------------------------------------------------------------


def apply_mappers(observed: list[dict[str, Any]], plan: parts.PartsPlan) -> list[dict[str, Any]]:
    by_name = {m["name"]: m for m in observed}
    for w in plan.ordered():
        if w.operation == "delete":
            by_name.pop(w.name)
        else:
            by_name[w.name] = as_keycloak_holds(dict(w.body or {}), w.remote_id or f"new-{w.name}")
    return list(by_name.values())


names_ = st.sampled_from(["a", "b", "c", "d"])
mapper_st = st.builds(
    lambda n, v: {"name": n, "protocolMapper": "oidc-hardcoded-claim-mapper", "config": {"claim.value": v}},
    names_,
    st.sampled_from(["x", "y"]),
)


@given(
    declared=st.lists(mapper_st, unique_by=lambda m: m["name"], max_size=4),
    before=st.lists(mapper_st, unique_by=lambda m: m["name"], max_size=4),
    hand_made=st.sets(names_, max_size=2),
)
def test_applying_the_mapper_plan_converges(
    declared: list[dict[str, Any]], before: list[dict[str, Any]], hand_made: set[str]
) -> None:
    observed = [
        {**m, "id": m["name"]}
        if m["name"] in hand_made
        else as_keycloak_holds(parts.mapper_body(m), m["name"])
        for m in before
    ]
    c = content(protocolMappers=declared)
    first = parts.plan_mappers(c, observed)
    after = apply_mappers(observed, first)
    second = parts.plan_mappers(c, after)
    assert second.writes == [] and second.conflicts == first.conflicts
    kept = {m["name"] for m in observed if m["name"] in hand_made}
    assert kept <= {m["name"] for m in after}  # nothing made by hand is ever removed


role_st = st.builds(lambda n, d: {"name": n, "description": d}, names_, st.sampled_from(["", "d"]))


@given(
    declared=st.lists(role_st, unique_by=lambda r: r["name"], max_size=4),
    before=st.lists(
        st.tuples(role_st, st.sampled_from([OWNER, "other/x", None])), unique_by=lambda t: t[0]["name"]
    ),
)
def test_applying_the_client_role_plan_converges(
    declared: list[dict[str, Any]], before: list[tuple[dict[str, Any], str | None]]
) -> None:
    observed = {
        r["name"]: {**r, "attributes": {} if o is None else {names.ROLE_OWNER_ATTRIBUTE: [o]}}
        for r, o in before
    }
    c = content(roles=declared)
    first = parts.plan_client_roles(c, observed.values(), OWNER)
    for w in first.ordered():
        if w.operation == "delete":
            observed.pop(w.name)
        else:
            observed[w.name] = dict(w.body or {})
    assert parts.plan_client_roles(c, observed.values(), OWNER).writes == []


placements = st.dictionaries(
    st.sampled_from(sorted(SCOPES)), st.sampled_from([parts.DEFAULT_SCOPES, parts.OPTIONAL_SCOPES])
)


@given(
    declared=placements,
    managed=st.sets(st.sampled_from([parts.DEFAULT_SCOPES, parts.OPTIONAL_SCOPES])),
    held=st.dictionaries(
        st.sampled_from([*SCOPES, "theirs"]), st.sampled_from([parts.DEFAULT_SCOPES, parts.OPTIONAL_SCOPES])
    ),
)
def test_applying_the_scope_plan_converges(
    declared: dict[str, str], managed: set[str], held: dict[str, str]
) -> None:
    """Whatever is attached (`theirs`: a scope this namespace may not use, so never detached by id): after
    the writes each declared list is exactly what is attached, an undeclared list is untouched, and a
    second plan is empty."""
    fields = {key: sorted(n for n, w in declared.items() if w == key) for key in managed}
    c = content(**fields)
    observed = {key: sorted(n for n, w in held.items() if w == key) for key in parts.SCOPE_FIELDS}
    attached = {key: set(names) for key, names in observed.items()}
    for w in parts.plan_scopes(c, observed, SCOPES).ordered():
        key = parts.DEFAULT_SCOPES if w.part == "default-scope" else parts.OPTIONAL_SCOPES
        assert w.remote_id == SCOPES[w.name]  # attached and detached by the realm's id, never a guess
        if w.operation == "delete":
            attached[key].remove(w.name)
        else:
            attached[key].add(w.name)
    for key in parts.SCOPE_FIELDS:
        if key in fields:
            assert attached[key] - {"theirs"} == set(fields[key])
        else:
            assert attached[key] == set(observed[key])
    assert {k for k, v in attached.items() if "theirs" in v} == {
        k for k, v in observed.items() if "theirs" in v
    }
    after = {key: sorted(names) for key, names in attached.items()}
    assert parts.plan_scopes(c, after, SCOPES).writes == []


# --- hostile input ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [
        {"protocolMappers": [{**CLAIM, "protocolMapper": "script-mapper"}]},
        {"protocolMappers": [{**CLAIM, "config": {"bad key": "x"}}]},
        {"protocolMappers": [{**CLAIM, "config": {"claim.value": "a\r\nb"}}]},
        {"protocolMappers": [{**CLAIM, "config": {f"k{i}": "v" for i in range(33)}}]},
        {"protocolMappers": [CLAIM, CLAIM]},
        {"protocolMappers": [{**CLAIM, "name": "a\nb"}]},
        {"roles": [{"name": "r"}, {"name": "r"}]},
        {"roles": [{"name": ""}]},
        {"defaultClientScopes": ["a b"]},
        {"defaultClientScopes": ["email"], "optionalClientScopes": ["email"]},
        {"pkceMethod": "none"},
        {"logout": {"backChannelUrl": "javascript:alert(1)"}},
        {"accessTokenLifespanSeconds": 0},
        {"accessTokenLifespanSeconds": 2**31},
        {"postLogoutRedirectUris": ["https://a/##https://evil/"]},
    ],
)
def test_hostile_settings_are_refused_by_the_model(fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        spec(**fields)


def test_the_crd_carries_the_same_rules() -> None:
    schema = builders.crd_schema(names.CLIENT_KIND)["spec"]
    props = schema["properties"]
    mapper = props["protocolMappers"]["items"]["properties"]
    assert "oidc-audience-mapper" in mapper["protocolMapper"]["enum"]
    assert mapper["config"]["maxProperties"] == 32 and len(mapper["config"]["x-kubernetes-validations"]) == 1
    assert mapper["config"]["additionalProperties"]["maxLength"] == 4096
    assert props["roles"]["x-kubernetes-list-map-keys"] == ["name"]
    assert props["pkceMethod"]["enum"] == ["S256", "plain"]
    assert any("optionalClientScopes" in r["rule"] for r in schema["x-kubernetes-validations"])
    assert props["logout"]["properties"]["backChannelUrl"]["pattern"].startswith("^https?://")
