"""KeycloakClientScope and KeycloakGroup against the real Keycloak server, replicated by the operator running
as a real process (one module: each module starts its own Keycloak, about 20 s).

Client scopes: the scope and its mapper reach Keycloak, a client attaching it gets tokens carrying the
mapper's claim, hand edits are repaired with events, a quiet resync writes nothing, and ADR 0005: the same
scope name declared in two namespaces, one deleted, the other's object untouched.

Groups: a tree with realm and client role mappings reaches Keycloak and a member's token carries the roles,
hand edits are repaired with events, a quiet resync writes nothing, another team's client roles are out of
reach (Forbidden), the same group name in two namespaces (one deleted, the other untouched), and deleting
the tree in any order (a subgroup moved to the top while its parent is deleted keeps its id and members)
leaves Keycloak clean with no resource stuck."""

from __future__ import annotations

import base64
import json
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from keycloak_operator.kernel import names
from localcluster.keycloak import KeycloakProcess
from localcluster.keycloak_api import KeycloakApi
from localcluster.operator_process import OperatorProcess
from tests.integration.support import local_keycloak
from tests.integration.support.kubectl import Kubectl, events, wait_for
from tests.integration.test_client_settings import token_claims
from tests.integration.test_realm_settings import IDP_RES, identity_provider, idp_secret
from tests.integration.test_replication import (
    CLIENT_RES,
    GROUP_RES,
    REALM_RES,
    SCOPE_RES,
    admin_secret,
    client,
    phase,
    realm,
    replication_settled,
    rounds_seen,
    wait_phase,
)

pytestmark = pytest.mark.integration

CLAIM = {
    "name": "team-claim",
    "protocolMapper": "oidc-hardcoded-claim-mapper",
    "config": {
        "claim.name": "scope_team",
        "claim.value": "web",
        "jsonType.label": "String",
        "access.token.claim": "true",
    },
}


@pytest.fixture(scope="module")
def keycloak(kubectl: Kubectl) -> Iterator[KeycloakProcess]:
    yield from local_keycloak.serving(kubectl)


@pytest.fixture(scope="module")
def api(keycloak: KeycloakProcess) -> KeycloakApi:
    return KeycloakApi(keycloak)


def scope(namespace: str, resource_name: str, realm_ref: dict[str, str], **spec: Any) -> dict[str, Any]:
    """A KeycloakClientScope; the scope's name in Keycloak is the resource's unless `spec` names one."""
    return {
        "apiVersion": names.API_VERSION,
        "kind": names.CLIENT_SCOPE_KIND,
        "metadata": {"name": resource_name, "namespace": namespace},
        "spec": {"realm": realm_ref, "name": resource_name, **spec},
    }


def scope_in(kc_api: KeycloakApi, rn: str, name: str) -> dict[str, Any] | None:
    found = [s for s in kc_api.call("GET", f"/{rn}/client-scopes") or [] if s["name"] == name]
    assert len(found) <= 1, found
    return found[0] if found else None


def mapper_of(kc_api: KeycloakApi, rn: str, scope_id: str, name: str) -> dict[str, Any]:
    found = kc_api.call("GET", f"/{rn}/client-scopes/{scope_id}/protocol-mappers/models") or []
    return next(m for m in found if m["name"] == name)


def repaired(kubectl: Kubectl, ns: str, name: str, part: str) -> Callable[[], bool]:
    def probe() -> bool:
        found = events(kubectl, ns, name=name, reason="DriftRepaired")
        return any(
            e["involvedObject"]["kind"] == names.CLIENT_SCOPE_KIND and part in e["message"] for e in found
        )

    return probe


def test_a_client_scope_reaches_keycloak_and_the_token_and_is_repaired(
    kubectl: Kubectl,
    keycloak: KeycloakProcess,
    api: KeycloakApi,
    operator: OperatorProcess,
    namespace: str,
) -> None:
    ns, rn = namespace, f"s-{namespace}"
    kubectl.apply(admin_secret(keycloak, ns))
    kubectl.apply(realm(keycloak, ns, "main", realmName=rn))
    ref = {"name": "main"}
    kubectl.apply(
        scope(
            ns,
            "audit",
            ref,
            description="who did what",
            consentScreenText="Your audit trail",
            guiOrder=7,
            protocolMappers=[CLAIM],
        )
    )
    # Declared at once: the client attaches a scope the same round creates.
    kubectl.apply(client(ns, "web", ref, "web", serviceAccountsEnabled=True, defaultClientScopes=["audit"]))
    wait_phase(kubectl, SCOPE_RES, ns, "audit", "Ready", timeout=90)
    wait_phase(kubectl, CLIENT_RES, ns, "web", "Ready")

    s = scope_in(api, rn, "audit")
    assert s is not None and s["protocol"] == "openid-connect" and s["description"] == "who did what"
    attributes = s["attributes"]
    assert attributes["kcop.dev.kind"] == names.CLIENT_SCOPE_KIND and attributes["kcop.dev.namespace"] == ns
    assert attributes["consent.screen.text"] == "Your audit trail" and attributes["gui.order"] == "7"
    assert attributes["include.in.token.scope"] == "true"
    assert kubectl.get(SCOPE_RES, "audit", ns)["status"]["keycloakId"] == s["id"]
    c = api.client(rn, "web")
    assert c is not None and c["defaultClientScopes"] == ["audit"]

    secret = api.client_secret(rn, c["id"])
    claims = token_claims(keycloak, rn, "web", secret)
    assert claims["scope_team"] == "web"
    assert "audit" in str(claims.get("scope", "")).split()

    # A hand edit of the scope, then of its mapper: each repaired, with an event naming what.
    api.call("PUT", f"/{rn}/client-scopes/{s['id']}", {**s, "description": "hijacked"})
    wait_for(
        "scope repaired", lambda: (scope_in(api, rn, "audit") or {}).get("description") == "who did what", 60
    )
    wait_for("scope drift event", repaired(kubectl, ns, "audit", "description"), 30)
    edited = mapper_of(api, rn, s["id"], "team-claim")
    edited["config"]["claim.value"] = "hijacked"
    api.call("PUT", f"/{rn}/client-scopes/{s['id']}/protocol-mappers/models/{edited['id']}", edited)
    wait_for(
        "mapper repaired",
        lambda: mapper_of(api, rn, s["id"], "team-claim")["config"]["claim.value"] == "web",
        60,
    )
    wait_for("mapper drift event", repaired(kubectl, ns, "audit", "protocolMappers/team-claim"), 30)
    assert token_claims(keycloak, rn, "web", secret)["scope_team"] == "web"

    # Then a quiet resync writes nothing, to Keycloak or to Kubernetes.
    wait_for("rounds to settle", replication_settled(kubectl, keycloak, ns), timeout=90)
    before = api.admin_writes()
    versions = {
        o["metadata"]["resourceVersion"]
        for o in [*kubectl.list(SCOPE_RES, ns), *kubectl.list(CLIENT_RES, ns)]
    }
    start = rounds_seen(keycloak)
    wait_for("three more rounds", lambda: rounds_seen(keycloak) >= start + 3, 60)
    assert api.admin_writes() - before == 0
    after = {
        o["metadata"]["resourceVersion"]
        for o in [*kubectl.list(SCOPE_RES, ns), *kubectl.list(CLIENT_RES, ns)]
    }
    assert after == versions
    assert phase(kubectl, SCOPE_RES, ns, "audit") == "Ready"
    assert phase(kubectl, REALM_RES, ns, "main") == "Ready"


def test_seed_003_the_same_scope_name_in_two_namespaces_one_deleted_the_other_untouched(
    kubectl: Kubectl,
    keycloak: KeycloakProcess,
    api: KeycloakApi,
    operator: OperatorProcess,
    namespace_factory: Callable[..., str],
) -> None:
    foo, bar = namespace_factory("foo"), namespace_factory("bar")
    rn = f"s-{foo}"
    kubectl.apply(admin_secret(keycloak, foo))
    kubectl.apply(realm(keycloak, foo, "main", realmName=rn, clientNamespaces=[bar]))
    ref = {"name": "main", "namespace": foo}
    kubectl.apply(scope(foo, "shared", ref, description="foo's"))
    wait_phase(kubectl, SCOPE_RES, foo, "shared", "Ready", timeout=90)
    kubectl.apply(scope(bar, "shared", ref, description="bar's"))
    wait_phase(kubectl, SCOPE_RES, bar, "shared", "Conflict")
    held = scope_in(api, rn, "shared")
    assert held is not None and held["description"] == "foo's"
    conflict = kubectl.get(SCOPE_RES, "shared", bar)["status"]["conditions"][0]["message"]
    assert f"a {names.CLIENT_SCOPE_KIND} of another namespace" in conflict and foo not in conflict

    # bar's goes: its finalizer is released, and foo's object is not touched at all.
    kubectl.run("delete", SCOPE_RES, "shared", "-n", bar, "--wait=false")
    wait_for("bar's scope gone", lambda: kubectl.get(SCOPE_RES, "shared", bar) is None, 60)
    wait_for("rounds to settle", replication_settled(kubectl, keycloak, foo), timeout=90)
    assert scope_in(api, rn, "shared") == held
    assert phase(kubectl, SCOPE_RES, foo, "shared") == "Ready"

    # The other way round: foo's goes, its object with it; bar, declaring again, then takes the name.
    kubectl.apply(scope(bar, "shared", ref, description="bar's"))
    wait_phase(kubectl, SCOPE_RES, bar, "shared", "Conflict")
    kubectl.run("delete", SCOPE_RES, "shared", "-n", foo, "--wait=false")
    wait_phase(kubectl, SCOPE_RES, bar, "shared", "Ready", timeout=60)
    taken = scope_in(api, rn, "shared")
    assert taken is not None and taken["id"] != held["id"] and taken["description"] == "bar's"
    assert taken["attributes"]["kcop.dev.namespace"] == bar
    assert kubectl.get(SCOPE_RES, "shared", foo) is None
    kubectl.run("delete", SCOPE_RES, "shared", "-n", bar)
    wait_for("scope deleted from Keycloak", lambda: scope_in(api, rn, "shared") is None, 60)


HOSTILE_SCOPES = [
    ("a space in the name", {"name": "two words"}, "spec.name"),
    ("a path in the name", {"name": "../admin"}, "spec.name"),
    ("a name too long", {"name": "x" * 256}, "spec.name"),
    ("a control character in the consent text", {"consentScreenText": "a\u0007b"}, "spec.consentScreenText"),
    ("an unknown protocol", {"protocol": "cas"}, "spec.protocol"),
    ("a negative gui order", {"guiOrder": -1}, "spec.guiOrder"),
    ("OIDC mappers on a saml scope", {"protocol": "saml", "protocolMappers": [CLAIM]}, "saml"),
    (
        "a mapper config key with a slash",
        {"protocolMappers": [{**CLAIM, "config": {"a/b": "x"}}]},
        "config keys",
    ),
    (
        "a mapper type outside the enum",
        {"protocolMappers": [{**CLAIM, "protocolMapper": "script-x"}]},
        "spec.protocolMappers[0].protocolMapper",
    ),
]


@pytest.mark.parametrize(("case", "spec", "field"), HOSTILE_SCOPES, ids=[h[0] for h in HOSTILE_SCOPES])
def test_a_hostile_client_scope_is_refused_by_the_api_server_naming_the_field(
    kubectl: Kubectl, crds: None, namespace: str, case: str, spec: dict[str, Any], field: str
) -> None:
    result = kubectl.apply(scope(namespace, "x", {"name": "main"}, **spec), check=False)
    assert result.returncode != 0, f"{case}: accepted"
    assert field in result.stderr, result.stderr
    # The smallest valid one (protocol left out: OIDC) is accepted, and printed with its columns.
    kubectl.apply(scope(namespace, "plain", {"name": "main"}, protocolMappers=[CLAIM]))
    printed = kubectl.run("get", SCOPE_RES, "plain", "-n", namespace).stdout
    assert printed.split()[:5] == ["NAME", "SCOPE", "REALM", "PROTOCOL", "PHASE"]


# --- KeycloakGroup ------------------------------------------------------------------------------------------


def group(namespace: str, resource_name: str, realm_ref: dict[str, str], **spec: Any) -> dict[str, Any]:
    """A KeycloakGroup; the group's name in Keycloak is the resource's unless `spec` names one."""
    return {
        "apiVersion": names.API_VERSION,
        "kind": names.GROUP_KIND,
        "metadata": {"name": resource_name, "namespace": namespace},
        "spec": {"realm": realm_ref, "name": resource_name, **spec},
    }


def groups_in(kc_api: KeycloakApi, rn: str) -> dict[str, dict[str, Any]]:
    """Every group of the realm by path, the tree read level by level as the operator does."""
    out: dict[str, dict[str, Any]] = {}
    level = kc_api.call("GET", f"/{rn}/groups?briefRepresentation=false&first=0&max=500") or []
    while level:
        below = []
        for g in level:
            out[g["path"]] = g
            if g.get("subGroupCount"):
                path = f"/{rn}/groups/{g['id']}/children?briefRepresentation=false&first=0&max=500"
                below.extend(kc_api.call("GET", path) or [])
        level = below
    return out


def user_token(
    kc: KeycloakProcess, rn: str, client_id: str, secret: str, user: str, pw: str
) -> dict[str, Any]:
    data = urllib.parse.urlencode(
        {
            "grant_type": "password",
            "client_id": client_id,
            "client_secret": secret,
            "username": user,
            "password": pw,
            "scope": "openid",
        }
    ).encode()
    url = f"{kc.url}/realms/{rn}/protocol/openid-connect/token"
    with urllib.request.urlopen(url, data, timeout=30) as r:
        access = json.load(r)["access_token"]
    payload = access.split(".")[1]
    return dict(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))))


def group_repaired(kubectl: Kubectl, ns: str, name: str, part: str) -> Callable[[], bool]:
    def probe() -> bool:
        found = events(kubectl, ns, name=name, reason="DriftRepaired")
        return any(e["involvedObject"]["kind"] == names.GROUP_KIND and part in e["message"] for e in found)

    return probe


def quiet_writes(kubectl: Kubectl, keycloak: KeycloakProcess, api: KeycloakApi, ns: str) -> int:
    """Keycloak admin writes over three resync rounds once everything settled, and that no resource of `ns`
    changed meanwhile (counted rounds, not a sleep: rounds_seen counts each round's realm listing)."""
    wait_for("rounds to settle", replication_settled(kubectl, keycloak, ns), timeout=90)
    res = (REALM_RES, CLIENT_RES, GROUP_RES)
    versions = {o["metadata"]["resourceVersion"] for r in res for o in kubectl.list(r, ns)}
    before, start = api.admin_writes(), rounds_seen(keycloak)
    wait_for("three more rounds", lambda: rounds_seen(keycloak) >= start + 3, timeout=60)
    assert {o["metadata"]["resourceVersion"] for r in res for o in kubectl.list(r, ns)} == versions
    return api.admin_writes() - before


def test_a_group_tree_reaches_keycloak_and_a_members_token_and_is_repaired_then_deleted_cleanly(
    kubectl: Kubectl,
    keycloak: KeycloakProcess,
    api: KeycloakApi,
    operator: OperatorProcess,
    namespace: str,
) -> None:
    ns, rn = namespace, f"g-{namespace}"
    kubectl.apply(admin_secret(keycloak, ns))
    kubectl.apply(realm(keycloak, ns, "main", realmName=rn, roles=[{"name": "reader"}]))
    ref = {"name": "main"}
    kubectl.apply(client(ns, "web", ref, "web", directAccessGrantsEnabled=True, roles=[{"name": "view"}]))
    # Declared at once, the child first: it waits for its parent, and maps a role of a client made this round.
    kubectl.apply(group(ns, "backend", ref, parent="eng", clientRoles={"web": ["view"]}))
    kubectl.apply(group(ns, "eng", ref, attributes={"cost-center": ["42"]}, realmRoles=["reader"]))
    wait_phase(kubectl, GROUP_RES, ns, "eng", "Ready", timeout=90)
    wait_phase(kubectl, GROUP_RES, ns, "backend", "Ready", timeout=60)

    tree = groups_in(api, rn)
    eng, backend = tree["/eng"], tree["/eng/backend"]
    assert backend["parentId"] == eng["id"]
    assert eng["attributes"]["cost-center"] == ["42"] and eng["attributes"]["kcop.dev.kind"] == [
        names.GROUP_KIND
    ]
    assert eng["realmRoles"] == ["reader"] and backend["clientRoles"] == {"web": ["view"]}
    # An attribute value as long as Keycloak's GROUP_ATTRIBUTE.VALUE column holds (255) is stored whole.
    kubectl.apply(
        group(ns, "eng", ref, attributes={"cost-center": ["42"], "note": ["n" * 255]}, realmRoles=["reader"])
    )
    wait_for(
        "a 255-character value stored",
        lambda: groups_in(api, rn)["/eng"]["attributes"].get("note") == ["n" * 255],
        60,
    )
    kubectl.apply(group(ns, "eng", ref, attributes={"cost-center": ["42"]}, realmRoles=["reader"]))
    wait_for("and removed", lambda: "note" not in groups_in(api, rn)["/eng"]["attributes"], 60)
    eng = groups_in(api, rn)["/eng"]
    assert kubectl.get(GROUP_RES, "backend", ns)["status"]["keycloakId"] == backend["id"]
    printed = kubectl.run("get", GROUP_RES, "backend", "-n", ns).stdout
    assert printed.split()[:5] == ["NAME", "GROUP", "PARENT", "REALM", "PHASE"]

    # A member of the subgroup: its token carries the parent's realm role and the subgroup's client role.
    user = {
        "username": "alice",
        "enabled": True,
        "email": "alice@example.com",
        "emailVerified": True,
        "firstName": "Alice",
        "lastName": "Liddell",
        "credentials": [{"type": "password", "value": "pw-Alice-1", "temporary": False}],
    }
    api.call("POST", f"/{rn}/users", user)
    uid = api.call("GET", f"/{rn}/users?username=alice&exact=true")[0]["id"]
    api.call("PUT", f"/{rn}/users/{uid}/groups/{backend['id']}")
    web = api.client(rn, "web")
    assert web is not None
    claims = user_token(keycloak, rn, "web", api.client_secret(rn, web["id"]), "alice", "pw-Alice-1")
    assert "reader" in claims["realm_access"]["roles"]
    assert claims["resource_access"]["web"]["roles"] == ["view"]

    # Hand edits of a marked group: an attribute changed and one added, a realm role mapped by hand.
    edited = {**eng, "attributes": {**eng["attributes"], "cost-center": ["7"], "added": ["by hand"]}}
    api.call("PUT", f"/{rn}/groups/{eng['id']}", {k: edited[k] for k in ("id", "name", "attributes")})
    offline = api.call("GET", f"/{rn}/roles/offline_access")
    api.call("POST", f"/{rn}/groups/{eng['id']}/role-mappings/realm", [offline])

    def restored() -> bool:
        now = groups_in(api, rn)["/eng"]
        return (
            now["attributes"].get("cost-center") == ["42"]
            and "added" not in now["attributes"]
            and now["realmRoles"] == ["reader"]
        )

    wait_for("group repaired", restored, 60)
    wait_for("attribute drift event", group_repaired(kubectl, ns, "eng", "attributes.added"), 30)
    wait_for("role mapping drift event", group_repaired(kubectl, ns, "eng", "realmRoles/offline_access"), 30)

    # Then a quiet resync writes nothing, to Keycloak or to Kubernetes.
    assert quiet_writes(kubectl, keycloak, api, ns) == 0
    assert phase(kubectl, GROUP_RES, ns, "backend") == "Ready"

    # Deleting the parent first: it waits for its declared subgroup, then both go, and nothing is stuck.
    kubectl.run("delete", GROUP_RES, "eng", "-n", ns, "--wait=false")
    wait_phase(kubectl, GROUP_RES, ns, "eng", "Deleting", timeout=60)
    assert set(groups_in(api, rn)) == {"/eng", "/eng/backend"}
    # Then backend is moved to the top: Keycloak would delete it with eng, so eng still waits until it has
    # moved out; backend keeps its id and its member, and eng goes on a later round.
    kubectl.apply(group(ns, "backend", ref, clientRoles={"web": ["view"]}))

    def moved_out_and_eng_gone() -> bool:
        return kubectl.get(GROUP_RES, "eng", ns) is None and set(groups_in(api, rn)) == {"/backend"}

    wait_for("backend moved out, then eng deleted", moved_out_and_eng_gone, 90)
    assert groups_in(api, rn)["/backend"]["id"] == backend["id"]
    members = api.call("GET", f"/{rn}/groups/{backend['id']}/members") or []
    assert [m["username"] for m in members] == ["alice"]
    assert phase(kubectl, GROUP_RES, ns, "backend") == "Ready"
    kubectl.run("delete", GROUP_RES, "backend", "-n", ns, "--wait=false")
    wait_for("groups gone", lambda: not kubectl.list(GROUP_RES, ns), 60)
    assert groups_in(api, rn) == {}
    assert api.call("GET", f"/{rn}/users/{uid}") is not None  # the member is not the operator's


def test_seed_003_the_same_group_name_in_two_namespaces_and_another_teams_client_roles(
    kubectl: Kubectl,
    keycloak: KeycloakProcess,
    api: KeycloakApi,
    operator: OperatorProcess,
    namespace_factory: Callable[..., str],
) -> None:
    foo, bar = namespace_factory("foo"), namespace_factory("bar")
    rn = f"g-{foo}"
    kubectl.apply(admin_secret(keycloak, foo))
    kubectl.apply(realm(keycloak, foo, "main", realmName=rn, clientNamespaces=[bar]))
    ref = {"name": "main", "namespace": foo}
    kubectl.apply(client(foo, "web", ref, "web", roles=[{"name": "view"}]))
    kubectl.apply(group(foo, "shared", ref, attributes={"owner": ["foo"]}))
    wait_phase(kubectl, GROUP_RES, foo, "shared", "Ready", timeout=90)
    kubectl.apply(group(bar, "shared", ref, attributes={"owner": ["bar"]}))
    # foo's client, mapped by bar: out of reach (Forbidden, no revocation clock), nothing written, the field
    # named.
    kubectl.apply(group(bar, "spies", ref, clientRoles={"web": ["view"]}))
    wait_phase(kubectl, GROUP_RES, bar, "shared", "Conflict")

    def out_of_reach() -> bool:
        status = (kubectl.get(GROUP_RES, "spies", bar) or {}).get("status") or {}
        message = str((status.get("conditions") or [{}])[0].get("message", ""))
        return status.get("phase") == "Forbidden" and "spec.clientRoles.web" in message

    wait_for("bar's group mapping foo's client roles Forbidden", out_of_reach, 60)
    held = groups_in(api, rn)
    assert set(held) == {"/shared"} and held["/shared"]["attributes"]["owner"] == ["foo"]

    # bar's go: their finalizers are released, and foo's group is not touched at all.
    kubectl.run("delete", GROUP_RES, "shared", "spies", "-n", bar, "--wait=false")
    wait_for("bar's groups gone", lambda: not kubectl.list(GROUP_RES, bar), 60)
    wait_for("rounds to settle", replication_settled(kubectl, keycloak, foo), timeout=90)
    assert groups_in(api, rn) == held
    assert phase(kubectl, GROUP_RES, foo, "shared") == "Ready"

    kubectl.run("delete", GROUP_RES, "shared", "-n", foo, "--wait=false")
    wait_for("foo's group gone", lambda: kubectl.get(GROUP_RES, "shared", foo) is None, 60)
    assert groups_in(api, rn) == {}


def test_a_group_and_a_providers_group_mapper_do_not_get_round_the_composite_role_grant(
    kubectl: Kubectl,
    keycloak: KeycloakProcess,
    api: KeycloakApi,
    operator: OperatorProcess,
    namespace_factory: Callable[..., str],
) -> None:
    """Issue 26, finding 2: a team allowed to declare groups and identity providers makes a group holding a
    composite realm role (the realm owner's `boss`, which includes realm-management's view-users) and a
    provider whose mapper puts everyone signing in through it into that group. Without the realm owner's
    grant neither is written; with it both are, and a member's token carries the role; the grant withdrawn,
    the mapping goes and the member's token is back to plain."""
    owner, team = namespace_factory("own"), namespace_factory("team")
    rn = f"gi-{owner}"
    kubectl.apply(admin_secret(keycloak, owner))
    allowed = {"clientNamespaces": [team], "identityProviderNamespaces": [team]}
    kubectl.apply(realm(keycloak, owner, "main", realmName=rn, **allowed))
    wait_phase(kubectl, REALM_RES, owner, "main", "Ready", timeout=90)
    # The realm owner's composite role, made by hand (no resource declares it).
    api.call("POST", f"/{rn}/roles", {"name": "boss"})
    rm = api.client(rn, "realm-management")
    assert rm is not None
    view_users = api.call("GET", f"/{rn}/clients/{rm['id']}/roles/view-users")
    api.call("POST", f"/{rn}/roles/boss/composites", [view_users])

    ref = {"name": "main", "namespace": owner}
    kubectl.apply(client(team, "app", ref, "app", directAccessGrantsEnabled=True))
    kubectl.apply(group(team, "vip", ref, realmRoles=["boss"]))
    kubectl.apply(idp_secret(team, "upstream-secret"))
    group_mapper = {
        "name": "everyone-vip",
        "identityProviderMapper": "oidc-hardcoded-group-idp-mapper",
        "config": {"group": "/vip", "syncMode": "INHERIT"},
    }
    kubectl.apply(
        identity_provider(team, "corp", ref, "corp", "https://idp.example.com", mappers=[group_mapper])
    )

    def message(res: str, name: str) -> str:
        status = (kubectl.get(res, name, team) or {}).get("status") or {}
        return f"{status.get('phase')}: {(status.get('conditions') or [{}])[0].get('message', '')}"

    wait_for(
        "the group Forbidden",
        lambda: message(GROUP_RES, "vip").startswith("Forbidden: spec.realmRoles[boss]"),
        90,
    )
    assert f"spec.serviceAccountGrants needs {{namespace: {team}, roles: [boss]}}" in message(
        GROUP_RES, "vip"
    )
    wait_for(
        "the provider held", lambda: "spec.mappers[everyone-vip].config.group" in message(IDP_RES, "corp"), 60
    )
    assert "/vip" not in groups_in(api, rn)
    assert (api.call("GET", f"/{rn}/identity-provider/instances/corp/mappers") or []) == []

    # The realm owner grants the composite role: the group and the provider's mapper are written, and a member
    # (as the mapper would make one) gets the role and what it includes.
    grant = [{"namespace": team, "roles": ["boss"]}]
    kubectl.apply(realm(keycloak, owner, "main", realmName=rn, serviceAccountGrants=grant, **allowed))
    wait_phase(kubectl, GROUP_RES, team, "vip", "Ready", timeout=60)
    wait_phase(kubectl, IDP_RES, team, "corp", "Ready", timeout=60)
    vip = groups_in(api, rn)["/vip"]
    assert vip["realmRoles"] == ["boss"]
    user = {"username": "mallory", "enabled": True, "email": "m@example.com", "emailVerified": True,
            "firstName": "M", "lastName": "M",
            "credentials": [{"type": "password", "value": "pw-Mallory-1", "temporary": False}]}  # fmt: skip
    api.call("POST", f"/{rn}/users", user)
    uid = api.call("GET", f"/{rn}/users?username=mallory&exact=true")[0]["id"]
    api.call("PUT", f"/{rn}/users/{uid}/groups/{vip['id']}")
    app = api.client(rn, "app")
    assert app is not None
    secret = api.client_secret(rn, app["id"])
    claims = user_token(keycloak, rn, "app", secret, "mallory", "pw-Mallory-1")
    assert "boss" in claims["realm_access"]["roles"]

    # The grant withdrawn: the group loses the mapping (though it is Forbidden again), said in an event.
    kubectl.apply(realm(keycloak, owner, "main", realmName=rn, **allowed))
    wait_for("mapping removed", lambda: groups_in(api, rn)["/vip"].get("realmRoles", []) == [], 60)
    revoked = wait_for(
        "revoked event", lambda: events(kubectl, team, name="vip", reason="RoleMappingRevoked")
    )
    assert "realmRoles/boss" in revoked[0]["message"]
    claims = user_token(keycloak, rn, "app", secret, "mallory", "pw-Mallory-1")
    assert "boss" not in claims["realm_access"]["roles"]
    assert "realm-management" not in (claims.get("resource_access") or {})


HOSTILE_GROUPS = [
    ("a slash in the name", {"name": "a/b"}, "spec.name"),
    ("a marker attribute", {"attributes": {"kcop.dev.kind": ["KeycloakClient"]}}, "kcop.dev."),
    ("an attribute key with a space", {"attributes": {"two words": ["x"]}}, "attribute keys"),
    ("a repeated realm role", {"realmRoles": ["a", "a"]}, "spec.realmRoles"),
    ("a clientId key with a space", {"clientRoles": {"two words": ["view"]}}, "clientRoles keys"),
    ("its own parent", {"parent": "x"}, "spec.parent"),
    ("a parent that is no object name", {"parent": "../x"}, "spec.parent"),
]


@pytest.mark.parametrize(("case", "spec", "field"), HOSTILE_GROUPS, ids=[h[0] for h in HOSTILE_GROUPS])
def test_a_hostile_group_is_refused_by_the_api_server_naming_the_field(
    kubectl: Kubectl, crds: None, namespace: str, case: str, spec: dict[str, Any], field: str
) -> None:
    result = kubectl.apply(group(namespace, "x", {"name": "main"}, **spec), check=False)
    assert result.returncode != 0, f"{case}: accepted"
    assert field in result.stderr, result.stderr
