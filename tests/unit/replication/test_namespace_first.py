"""Whether a namespace may declare something in a realm is decided first, by namespace, for every kind: an
object from a namespace the realm does not allow is Forbidden whatever its spec (valid or garbage), and never
holds the realm's deletion. An invalid spec used to be an Error, which a deleting realm waited on: any
namespace could pin another's realm by declaring garbage in it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from keycloak_operator.core.replication.authentication_flow import flow_resource
from keycloak_operator.core.replication.client_scope import scope_resource
from keycloak_operator.core.replication.group import group_resource
from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.identity_provider import idp_resource
from keycloak_operator.core.replication.in_realm import client_resource, raw_parent
from keycloak_operator.core.replication.realm import blocked_realm_deletes, plan_realms
from keycloak_operator.core.replication.resources import RealmTarget
from keycloak_operator.core.replication.sync import Resource
from keycloak_operator.kernel import names

T0 = datetime(2026, 1, 1, tzinfo=UTC)
HOME = "team-a"
REALM = ObjectKey(names.REALM_KIND, HOME, "main")
OTHER_LISTS = "team-b"  # allowed by the realm's other allow-lists, never by the kind's own
STRANGER = "team-x"  # allowed by none
Builder = Callable[[Mapping[str, Any], Mapping[ObjectKey, RealmTarget], AbstractSet[str]], Resource]

OIDC = {
    "authorizationUrl": "https://up.example.com/auth",
    "tokenUrl": "https://up.example.com/token",
    "clientId": "kc",
    "clientSecret": {"name": "upstream", "key": "client-secret"},
}
# Every kind declared inside a realm: its kind, how a round reads it, its allow-list, a valid spec (without
# spec.realm) and an invalid one (each with a field the model refuses).
KINDS: list[tuple[str, Builder, str, dict[str, Any], dict[str, Any]]] = [
    (names.CLIENT_KIND, client_resource, "clientNamespaces", {"clientId": "web"}, {"clientId": "web app"}),
    (
        names.CLIENT_KIND,
        client_resource,
        "clientNamespaces",
        {"clientId": "urn:sp", "protocol": "saml"},
        {"clientId": "urn:sp", "protocol": "saml", "publicClient": True},
    ),
    (names.CLIENT_SCOPE_KIND, scope_resource, "clientNamespaces", {"name": "audit"}, {"name": 7}),
    (names.GROUP_KIND, group_resource, "clientNamespaces", {"name": "staff"}, {"name": "a/b"}),
    (
        names.IDENTITY_PROVIDER_KIND,
        idp_resource,
        "identityProviderNamespaces",
        {"alias": "up", "providerId": "oidc", "oidc": OIDC},
        {"alias": "up", "providerId": "saml", "oidc": OIDC},
    ),
    (
        names.AUTHENTICATION_FLOW_KIND,
        flow_resource,
        "flowNamespaces",
        {"alias": "team", "executions": [{"authenticator": "auth-cookie", "requirement": "ALTERNATIVE"}]},
        {"alias": "team", "executions": "all of them"},
    ),
]
IDS = ["client", "saml-client", "client-scope", "group", "identity-provider", "flow"]


def targets(realm_deleting: bool = False) -> dict[ObjectKey, RealmTarget]:
    """Realm team-a/main: each of its allow-lists names team-b, none names team-x."""
    realm = Resource(REALM, "main", {"realm": "main"}, T0, deleting=realm_deleting)
    lists = frozenset({OTHER_LISTS})
    return {REALM: RealmTarget(realm, None, None, lists, provider_namespaces=lists, flow_namespaces=lists)}


def targets_without(allow_list: str) -> dict[ObjectKey, RealmTarget]:
    """The realm with the kind's own allow-list emptied: team-b is allowed only for the other kinds."""
    field = {
        "clientNamespaces": "client_namespaces",
        "identityProviderNamespaces": "provider_namespaces",
        "flowNamespaces": "flow_namespaces",
    }[allow_list]
    return {REALM: replace(targets()[REALM], **{field: frozenset()})}


def k8s(kind: str, ns: str, spec: Any) -> dict[str, Any]:
    meta = {"namespace": ns, "name": "x", "creationTimestamp": "2026-01-01T00:00:00Z"}
    return {"kind": kind, "metadata": meta, "spec": spec}


def in_realm(spec: dict[str, Any]) -> dict[str, Any]:
    return {"realm": {"name": "main", "namespace": HOME}, **spec}


def deleting_realm() -> Resource:
    return Resource(REALM, "main", {"realm": "main"}, T0, deleting=True)


def assert_forbidden_and_never_pins(r: Resource, allow_list: str) -> None:
    assert r.problem is not None and r.problem.phase == "Forbidden", r.problem
    assert r.problem.reason == "NamespaceNotAllowed" and r.problem.revocable
    assert f"KeycloakRealm {HOME}/main does not allow" in r.problem.message
    assert f"(spec.{allow_list})" in r.problem.message
    assert r.parent == REALM  # still in the realm's scope: its object, if any, is revoked there
    assert blocked_realm_deletes([deleting_realm()], [r]) == {}
    scope = plan_realms([deleting_realm()], [r], [])
    assert REALM in scope.finalizable and REALM not in scope.verdicts


# --- every kind ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "build", "allow_list", "valid", "invalid"), KINDS, ids=IDS)
@pytest.mark.parametrize("which", ["valid", "invalid", "nothing but the realm"])
def test_a_namespace_the_realm_does_not_allow_is_forbidden_whatever_its_spec(
    kind: str, build: Builder, allow_list: str, valid: dict, invalid: dict, which: str
) -> None:
    spec = {"valid": valid, "invalid": invalid, "nothing but the realm": {}}[which]
    r = build(k8s(kind, STRANGER, in_realm(spec)), targets(), frozenset())
    assert_forbidden_and_never_pins(r, allow_list)


@pytest.mark.parametrize(("kind", "build", "allow_list", "valid", "invalid"), KINDS, ids=IDS)
def test_another_allow_list_of_the_realm_does_not_count(
    kind: str, build: Builder, allow_list: str, valid: dict, invalid: dict
) -> None:
    for spec in (valid, invalid):
        r = build(k8s(kind, OTHER_LISTS, in_realm(spec)), targets_without(allow_list), frozenset())
        assert_forbidden_and_never_pins(r, allow_list)


@pytest.mark.parametrize(("kind", "build", "allow_list", "valid", "invalid"), KINDS, ids=IDS)
@pytest.mark.parametrize("ns", [HOME, OTHER_LISTS])
def test_an_invalid_spec_from_an_allowed_namespace_is_an_error_and_holds_the_realm(
    kind: str, build: Builder, allow_list: str, valid: dict, invalid: dict, ns: str
) -> None:
    """What the namespace is allowed to declare may be live in Keycloak: the realm waits for it."""
    r = build(k8s(kind, ns, in_realm(invalid)), targets(), frozenset())
    assert r.problem is not None and r.problem.reason == "InvalidSpec"
    assert r.parent == REALM
    assert REALM in blocked_realm_deletes([deleting_realm()], [r])
    assert build(k8s(kind, ns, in_realm(valid)), targets(), frozenset()).problem is None


def test_a_refusal_of_part_of_an_allowed_resource_still_holds_the_realm() -> None:
    """Forbidden as such is not the test: an identity provider of an allowed namespace refused only for its
    first-login flow may have an object in the realm."""
    spec = in_realm({**KINDS[4][3], "firstBrokerLoginFlowAlias": "first broker login"})
    r = idp_resource(k8s(names.IDENTITY_PROVIDER_KIND, OTHER_LISTS, spec), targets())
    assert r.problem is not None and r.problem.reason == "FlowNotAllowed"
    assert REALM in blocked_realm_deletes([deleting_realm()], [r])


@pytest.mark.parametrize(("kind", "build", "allow_list", "valid", "invalid"), KINDS, ids=IDS)
def test_a_realm_not_known_yet_judges_nothing(
    kind: str, build: Builder, allow_list: str, valid: dict, invalid: dict
) -> None:
    def reason(spec: dict[str, Any], unreadable: AbstractSet[str] = frozenset()) -> str:
        problem = build(k8s(kind, STRANGER, in_realm(spec)), {}, unreadable).problem
        return problem.reason if problem is not None else ""

    assert reason(valid) == "RealmNotFound"
    assert reason(valid, frozenset({HOME})) == "NamespaceUnreadable"
    assert reason(invalid) == "InvalidSpec"


# --- the realm reference of an unvalidated object -----------------------------------------------------------


@pytest.mark.parametrize(
    "spec",
    [
        None,
        [],
        "spec",
        {},
        {"realm": None},
        {"realm": "main"},
        {"realm": ["main"]},
        {"realm": {}},
        {"realm": {"name": 7}},
        {"realm": {"name": ""}},
        {"realm": {"name": ["main"]}},
        {"realm": {"name": "m" * 1_000_000}},
        {"realm": {"name": "main", "namespace": 7}},
        {"realm": {"name": "main", "namespace": {"name": HOME}}},
        {"realm": {"name": "main", "namespace": "n" * 1_000_000}},
    ],
)
def test_a_realm_reference_of_another_type_or_size_names_no_realm(spec: Any) -> None:
    key = ObjectKey(names.CLIENT_KIND, STRANGER, "x")
    assert raw_parent(k8s(names.CLIENT_KIND, STRANGER, spec), key) is None


@pytest.mark.parametrize(
    ("ref", "parent"),
    [
        ({"name": "main", "namespace": HOME}, REALM),
        ({"name": "main", "namespace": HOME, "junk": [1]}, REALM),
        ({"name": "main"}, ObjectKey(names.REALM_KIND, STRANGER, "main")),  # absent: the object's own
        ({"name": "main", "namespace": ""}, ObjectKey(names.REALM_KIND, STRANGER, "main")),
        # Forms the model refuses still name a realm (one that cannot exist): a model tightened by an upgrade
        # must not make a live object an orphan.
        ({"name": "Main", "namespace": HOME}, ObjectKey(names.REALM_KIND, HOME, "Main")),
        ({"name": "main", "namespace": "a/b"}, ObjectKey(names.REALM_KIND, "a/b", "main")),
    ],
)
def test_a_realm_reference_is_read_as_a_valid_spec_reads_it(ref: dict[str, Any], parent: ObjectKey) -> None:
    key = ObjectKey(names.CLIENT_KIND, STRANGER, "x")
    assert raw_parent(k8s(names.CLIENT_KIND, STRANGER, {"realm": ref, "clientId": 3}), key) == parent


# --- whatever the spec --------------------------------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=16,
)
FIELDS = st.sampled_from(
    ["clientId", "protocol", "name", "alias", "providerId", "oidc", "saml", "executions", "redirectUris",
     "publicClient", "roles", "serviceAccountRoles", "logout", "parent", "realmRoles", "mappers"]
)  # fmt: skip


def any_spec(base: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """The kind's valid spec with any of its fields (or others) replaced or added, anything as values."""
    return st.dictionaries(FIELDS | st.text(max_size=12), JSON, max_size=6).map(lambda d: {**base, **d})


@given(data=st.data(), which=st.sampled_from(range(len(KINDS))), ns=st.sampled_from([STRANGER, OTHER_LISTS]))
def test_any_spec_naming_the_realm_from_a_namespace_it_does_not_allow_is_forbidden(
    data: st.DataObject, which: int, ns: str
) -> None:
    kind, build, allow_list, valid, _ = KINDS[which]
    spec = data.draw(any_spec(valid))
    ref = data.draw(st.dictionaries(st.text(max_size=8), JSON, max_size=2))
    spec["realm"] = {**ref, "name": "main", "namespace": HOME}
    r = build(k8s(kind, ns, spec), targets_without(allow_list), frozenset())
    assert_forbidden_and_never_pins(r, allow_list)


@given(data=st.data(), which=st.sampled_from(range(len(KINDS))), spec=JSON)
def test_nothing_from_a_namespace_the_realm_does_not_allow_ever_holds_its_deletion(
    data: st.DataObject, which: int, spec: Any
) -> None:
    """Whatever the object, its realm reference included: it names the realm and is Forbidden, or names no
    realm the round knows."""
    kind, build, *_ = KINDS[which]
    if data.draw(st.booleans()) and isinstance(spec, dict):
        spec["realm"] = data.draw(JSON | st.just({"name": "main", "namespace": HOME}))
    r = build(k8s(kind, STRANGER, spec), targets(), frozenset())
    assert blocked_realm_deletes([deleting_realm()], [r]) == {}
    if r.parent == REALM:
        assert r.problem is not None and r.problem.reason == "NamespaceNotAllowed"
