"""What an identity provider may not do, beyond its CRD (review 3): mappers handing out roles or groups
outside its namespace's reach (idp_mapper_rule.py, the service accounts' grant rule), the advanced mappers,
a first-login flow from another namespace than the realm's, plain-http loopback URLs without the operator's
setting, Keycloak's mask as a secret, and mapper listings Keycloak answers oddly."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from keycloak_operator.core.replication import identity_provider as idp
from keycloak_operator.core.replication import idp_mapper_rule as rule
from keycloak_operator.core.replication import idp_mappers, idp_secret, read_marker
from keycloak_operator.core.replication.service_account import Grant, RealmView
from keycloak_operator.kernel import names
from keycloak_operator.models.identity_provider import KeycloakIdentityProviderSpec
from tests.unit.replication.test_identity_provider import k8s, plan, resource, secret, stored, targets

Obj = dict[str, Any]


def _mapper(kind: str, name: str = "m", **config: str) -> Obj:
    return {"name": name, "identityProviderMapper": kind, "config": config}


def _role(role: str) -> Obj:
    return _mapper("oidc-hardcoded-role-idp-mapper", role=role)


VIEW = RealmView(
    "main",
    {
        "plain": {"id": "r1", "composite": False},
        "boss": {"id": "r2", "composite": True},
        "vague": {"id": "r3"},  # composite not said: counts as composite
        "default-roles-main": {"id": "r4", "composite": True},
    },
    {
        "realm-management": ("c1", None),
        "app-b": ("c2", "team-b"),
        "app-a": ("c3", "team-a"),
        "my.app": ("c4", "team-b"),
    },
    {},
)
GROUPS = {"/b-team": "team-b", "/a-admins": "team-a", "/by-hand": None}


def _problem(ns: str, *mappers: Obj, grants: tuple[Grant, ...] = ()) -> Any:
    found = rule.refusals({"mappers": list(mappers)}, ns, grants, "team-a/main", VIEW, GROUPS)
    return next(iter(found.values()), None)  # the first refused mapper's verdict, as the writer holds it


@pytest.mark.parametrize("ns", ["team-b", "team-a"])  # the realm's own namespace too, as service accounts
def test_a_mapper_giving_realm_admin_is_forbidden_naming_its_field(ns: str) -> None:
    v = _problem(ns, _role("realm-management.realm-admin"))
    assert v.phase == "Forbidden" and v.reason == rule.NOT_GRANTED and not v.revocable
    assert v.message.startswith(
        "spec.mappers[m].config.role: role 'realm-admin' of client 'realm-management'"
    )
    assert "serviceAccountGrants" in v.message
    for kind in ("oidc-role-idp-mapper", "oidc-hardcoded-role-idp-mapper"):
        assert _problem(ns, _mapper(kind, role="realm-management.realm-admin", claim="x")) is not None


def test_a_grant_opens_a_client_role_as_for_service_accounts() -> None:
    grant = Grant("team-b", "realm-management", frozenset({"view-users"}))
    assert _problem("team-b", _role("realm-management.view-users"), grants=(grant,)) is None
    assert _problem("team-b", _role("realm-management.realm-admin"), grants=(grant,)) is not None
    other = Grant("team-c", "realm-management", frozenset({"view-users"}))
    assert _problem("team-b", _role("realm-management.view-users"), grants=(other,)) is not None


def test_own_clients_roles_and_plain_realm_roles_are_allowed_others_not() -> None:
    assert _problem("team-b", _role("app-b.reader")) is None
    assert _problem("team-b", _role("my.app.reader")) is None  # a clientId with a dot, read as Keycloak does
    assert _problem("team-b", _role("app-a.reader")) is not None  # another team's client
    assert _problem("team-b", _role("plain")) is None
    assert _problem("team-b", _role("default-roles-main")) is None
    for composite in ("boss", "vague"):
        v = _problem("team-b", _role(composite))
        assert v.reason == rule.NOT_GRANTED and "composite realm role" in v.message
    assert _problem("team-b", _role("boss"), grants=(Grant("team-b", None, frozenset({"boss"})),)) is None
    missing = _problem("team-b", _role("nope"))
    assert missing.phase == "Pending" and missing.message.startswith("spec.mappers[m].config.role")


def test_a_group_mapper_may_name_only_its_namespaces_groups() -> None:
    group = "oidc-hardcoded-group-idp-mapper"
    assert _problem("team-b", _mapper(group, group="/b-team")) is None
    for path in ("/a-admins", "/by-hand", "/nowhere", ""):
        v = _problem("team-b", _mapper(group, name="g", group=path))
        assert v.phase == "Forbidden" and v.message.startswith("spec.mappers[g].config.group")
    assert not rule.hands_out({"mappers": [_mapper("oidc-user-attribute-idp-mapper", claim="x")]})
    assert rule.hands_out({"mappers": [_mapper(group, group="/x")]})


@pytest.mark.parametrize("kind", ["oidc-advanced-role-idp-mapper", "oidc-advanced-group-idp-mapper"])
def test_the_advanced_mappers_whose_json_is_not_checked_are_not_offered(kind: str) -> None:
    spec = k8s("team-b", "x", mappers=[_mapper(kind, claims='[{"key":"a","value":"b"}]')])["spec"]
    with pytest.raises(ValidationError):
        KeycloakIdentityProviderSpec.model_validate(spec)


def test_a_first_login_flow_only_from_the_realms_own_namespace() -> None:
    r = resource("team-b", "b", firstBrokerLoginFlowAlias="anything")
    assert r.problem is not None and r.problem.phase == "Forbidden" and not r.problem.revocable
    assert r.problem.message.startswith("spec.firstBrokerLoginFlowAlias")
    assert resource("team-a", "a", firstBrokerLoginFlowAlias="first broker login").problem is None


@pytest.mark.parametrize("field", ["tokenUrl", "authorizationUrl", "jwksUrl", "issuer"])
def test_a_loopback_http_url_is_an_error_unless_the_operator_allows_it(field: str) -> None:
    obj = k8s("team-a", "x", oidc={field: "http://127.0.0.1:9000/metrics"})
    r = idp.idp_resource(obj, targets())
    assert r.problem is not None and r.problem.phase == "Error" and r.problem.reason == "InsecureUrl"
    assert r.problem.message.startswith(f"spec.oidc.{field}:")
    assert idp.idp_resource(obj, targets(), loopback_http=True).problem is None
    assert (
        idp.idp_resource(k8s("team-a", "y", oidc={field: "https://up.example.com/x"}), targets()).problem
        is None
    )


def test_keycloaks_mask_as_the_secret_is_refused_naming_the_field() -> None:
    obj = k8s("team-a", "m")
    r, value = idp_secret.with_client_secret(
        idp.idp_resource(obj, targets()), ("upstream", "client-secret"), secret(idp.MASKED)
    )
    assert value is None and r.problem is not None
    assert (r.problem.phase, r.problem.reason) == ("Error", "SecretInvalid")
    assert r.problem.message.startswith(idp.SECRET_FIELD) and idp.MASKED not in r.problem.message


@pytest.mark.parametrize("odd", ["a string", 5, ["list"], None])
def test_a_mapper_whose_config_is_not_a_map_is_foreign_never_a_crash(odd: Any) -> None:
    content = {
        **resource(
            mappers=[{**_mapper("oidc-username-idp-mapper", name="user"), "config": {"template": "x"}}]
        ).content
    }
    observed = [
        {"id": "m1", "name": "user", "identityProviderMapper": "oidc-username-idp-mapper", "config": odd},
        {"id": "m2", "name": "other", "config": odd},
    ]
    plan = idp_mappers.plan_mappers(content, observed)
    assert plan.writes == [] and plan.conflicts == ["mapper user"]


def test_the_kinds_are_what_the_rule_reads() -> None:
    assert (
        names.GROUP_KIND == "KeycloakGroup"
        and set(
            KeycloakIdentityProviderSpec.model_json_schema()["$defs"]["IdpMapper"]["properties"][
                "identityProviderMapper"
            ]["enum"]
        )
        >= rule.ROLE_MAPPERS
    )


def test_an_update_keeps_what_the_operator_does_not_manage() -> None:
    r = resource("team-a", "upstream", displayName="New")
    before = {
        **stored(resource("team-a", "upstream")),
        "linkOnly": True,
        "postBrokerLoginFlowAlias": "post",
        "authenticateByDefault": True,
    }
    before["config"] = {**before["config"], "clientAssertionSigningAlg": "ES256", "issuer": "https://old"}
    [update] = plan([r], [before]).plan.updates
    body = idp.upsert_body(update, None, before)
    assert body["linkOnly"] is True and body["postBrokerLoginFlowAlias"] == "post"
    assert body["authenticateByDefault"] is True and body["internalId"] == before["internalId"]
    assert body["config"]["clientAssertionSigningAlg"] == "ES256"
    assert body["displayName"] == "New" and body["config"]["issuer"] == ""  # declared fields still win
    assert body["config"]["clientSecret"] == idp.MASKED and read_marker(body["config"]) is not None


@pytest.mark.parametrize("genuine_first", [True, False])
def test_a_copied_marker_never_gets_the_genuine_provider_deleted(genuine_first: bool) -> None:
    r = resource("team-b", "b")
    genuine = stored(r)
    copy_ = {**stored(r), "alias": "a-evil", "internalId": "h-evil"}
    copy_["config"] = {**copy_["config"], "tokenUrl": "https://attacker.example/t"}
    sp = plan([r], [genuine, copy_] if genuine_first else [copy_, genuine])
    assert [d.remote_id for d in sp.plan.duplicates] == ["a-evil"]
    assert sp.plan.updates == [] and sp.remote_ids[r.key] == "b" and sp.drift == {}


@pytest.mark.parametrize("first", ["x1", "x2"])
def test_of_two_equal_copies_the_one_the_status_names_is_kept(first: str) -> None:
    from keycloak_operator.core.replication.diff import diff
    from keycloak_operator.core.replication.plan import Actual, Desired

    want = Desired.of(resource().key, {"a": 1})
    copies = [Actual(want.key, "x1", want.content_hash), Actual(want.key, "x2", want.content_hash)]
    ordered = copies if first == "x1" else copies[::-1]
    kept = diff([want], ordered, {idp.KIND}, preferred={want.key: "x2"})
    assert [d.remote_id for d in kept.duplicates] == ["x1"]
    # The planner prefers the copy the resource's status names, read from the object.
    obj = {**k8s("team-b", "b"), "status": {"keycloakId": "b"}}
    assert idp.idp_resource(obj, targets(frozenset({"team-b"}))).keycloak_id == "b"
    assert idp.idp_resource({**obj, "status": {"keycloakId": 5}}, targets()).keycloak_id is None


def test_an_orphaned_flow_of_the_operators_is_never_taken_for_a_hand_made_one() -> None:
    """Team B creates the owner's alias (idp-auto-link) while the owner's flow is absent, then drops its
    resource's finalizer and deletes it: the flow stays with a uuid5 id and no owner. A provider naming that
    alias is refused; a hand-made flow (Keycloak's random v4 id) and the owner's own flow are allowed."""
    from keycloak_operator.core.replication import authentication_flow as af
    from keycloak_operator.core.replication import flow_build
    from keycloak_operator.core.replication import idp_flow_rule as flow_rule
    from tests.unit.replication.test_authentication_flow import resource as flow

    p = resource("team-a", "corp", firstBrokerLoginFlowAlias="login")
    realm_key = p.parent
    assert realm_key is not None
    gone = af.flow_id("main", flow("team-b", "takeover").key)
    mine = flow("team-a", "mine")

    def refused(listed: Obj, declared: list[Any]) -> bool:
        return p.key in flow_rule.flow_refusals([p], [listed], declared, "main", realm_key)

    orphan = {"id": gone, "alias": "login", "builtIn": False}
    assert refused(orphan, [mine])
    verdict = flow_rule.flow_refusals([p], [orphan], [mine], "main", realm_key)[p.key]
    assert verdict.phase == "Forbidden" and verdict.message.startswith("spec.firstBrokerLoginFlowAlias")
    assert refused({"id": "hand-login", "alias": "login", "description": flow_build.build_tag({})}, [])
    assert not refused({"id": "0b6ad2a4-5a4b-4f45-8d5d-2f5e4a4c1b9e", "alias": "login"}, [mine])
    assert not refused({"id": af.flow_id("main", mine.key, 1), "alias": "login"}, [mine])


def test_a_deleting_flow_a_provider_names_waits_naming_the_provider_and_field() -> None:
    """Keycloak refuses to delete a flow any provider names (first or post broker login, declared or made by
    hand): that flow waits, naming who holds it; a flow no provider names is not held."""
    from keycloak_operator.core.replication import idp_flow_rule as flow_rule
    from keycloak_operator.core.replication.identity import ObjectKey

    login, other = ObjectKey(names.AUTHENTICATION_FLOW_KIND, "team-a", "login"), ObjectKey("x", "team-a", "o")
    providers = [
        {"alias": "corp", "firstBrokerLoginFlowAlias": "login flow"},
        {"alias": "by-hand", "postBrokerLoginFlowAlias": "login flow"},
        {"alias": "plain", "firstBrokerLoginFlowAlias": "first broker login"},
    ]
    blocks = flow_rule.deletion_blocks({login: "login flow", other: "other flow"}, providers)
    assert blocks == {
        login: "identity provider 'corp' (firstBrokerLoginFlowAlias), 'by-hand' (postBrokerLoginFlowAlias) "
        "uses flow 'login flow': it is deleted once no provider names it"
    }
    assert flow_rule.deletion_blocks({login: "login flow"}, []) == {}


def test_held_mappers_are_judged_as_keycloak_holds_them_only_the_operators_and_only_when_forbidden() -> None:
    def held(name: str, mapper: Obj, ours: bool = True) -> Obj:
        config = {**mapper["config"], **({idp_mappers.MAPPER_HASH: "h"} if ours else {})}
        return {**mapper, "id": f"id-{name}", "name": name, "config": config}

    mappers = [
        held("boss", _role("boss")),  # composite, not granted: goes
        held("plain", _role("plain")),  # a plain realm role: stays
        held("missing", _role("no-such-role")),  # Pending, not Forbidden: stays
        held("theirs", _mapper("oidc-hardcoded-group-idp-mapper", group="/b-team")),  # team-b's group: goes
        held("by-hand", _role("boss"), ours=False),  # an admin's, never the operator's to judge
        held("claim", _mapper("hardcoded-attribute-idp-mapper", attribute="x")),  # hands out nothing
        {
            "name": "no-id",
            "identityProviderMapper": "oidc-hardcoded-role-idp-mapper",
            "config": {"role": "boss"},
        },
    ]

    def ours(m: Any) -> bool:
        return idp_mappers.MAPPER_HASH in idp_mappers.mapper_config(m)

    gone = rule.held_refusals(mappers, ours, "team-a", (), "team-a/main", VIEW, GROUPS)
    assert [m["name"] for m in gone] == ["boss", "theirs"]
    granted = (Grant("team-a", None, frozenset({"boss"})),)
    assert [m["name"] for m in rule.held_refusals(mappers, ours, "team-a", granted, "x", VIEW, GROUPS)] == [
        "theirs"
    ]
