"""A client's roles, protocol mappers, client scopes, PKCE and logout settings replicated into the real
Keycloak server by the operator running as a real process; a token the client gets carries what its mappers
declare. A SAML client's settings and mappers, and the metadata Keycloak then serves for it."""

from __future__ import annotations

import base64
import json
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from localcluster.keycloak import KeycloakProcess
from localcluster.keycloak_api import KeycloakApi
from localcluster.operator_process import OperatorProcess
from tests.integration.support import local_keycloak
from tests.integration.support.certificates import self_signed_pem
from tests.integration.support.kubectl import Kubectl, events, wait_for
from tests.integration.test_replication import (
    CLIENT_RES,
    REALM_RES,
    admin_secret,
    client,
    phase,
    realm,
    replication_settled,
    rounds_seen,
    wait_phase,
)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def keycloak(kubectl: Kubectl) -> Iterator[KeycloakProcess]:
    yield from local_keycloak.serving(kubectl)


HARDCODED = {
    "name": "team-claim",
    "protocolMapper": "oidc-hardcoded-claim-mapper",
    "config": {
        "claim.name": "team",
        "claim.value": "web",
        "jsonType.label": "String",
        "access.token.claim": "true",
    },
}
AUDIENCE = {
    "name": "api-audience",
    "protocolMapper": "oidc-audience-mapper",
    "config": {"included.custom.audience": "api.example.com", "access.token.claim": "true"},
}

# A clientId with dots, none of whose prefixes is a client: a role text `<it>.role` has one client reading.
DOTTED = "other-client.with.dots"
# The user's roles of the client it names, under a claim named after that client's clientId.
BY_CLIENT = {
    "name": "by-client",
    "protocolMapper": "oidc-usermodel-client-role-mapper",
    "config": {
        "usermodel.clientRoleMapping.clientId": "account",
        "claim.name": "${client_id}.roles",
        "multivalued": "true",
        "jsonType.label": "String",
        "access.token.claim": "true",
    },
}


def settings() -> dict[str, Any]:
    return {
        "serviceAccountsEnabled": True,
        "roles": [{"name": "reader"}, {"name": "writer", "description": "may write"}],
        "protocolMappers": [HARDCODED, AUDIENCE],
        "defaultClientScopes": ["basic", "roles", "profile"],
        "optionalClientScopes": ["email"],
        "pkceMethod": "S256",
        "logout": {"frontChannel": False, "backChannelUrl": "https://web.example.com/logout"},
        "accessTokenLifespanSeconds": 600,
        "postLogoutRedirectUris": ["https://web.example.com/bye"],
    }


def token_claims(kc: KeycloakProcess, realm_name: str, client_id: str, secret: str) -> dict[str, Any]:
    data = urllib.parse.urlencode(
        {"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret}
    ).encode()
    url = f"{kc.url}/realms/{realm_name}/protocol/openid-connect/token"
    with urllib.request.urlopen(url, data, timeout=30) as r:
        access = json.load(r)["access_token"]
    payload = access.split(".")[1]
    return dict(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))))


def mappers(api: KeycloakApi, rn: str, uuid: str) -> dict[str, dict[str, Any]]:
    found = api.call("GET", f"/{rn}/clients/{uuid}/protocol-mappers/models") or []
    return {m["name"]: m for m in found}


def test_client_settings_reach_keycloak_the_token_and_are_repaired(
    kubectl: Kubectl,
    keycloak: KeycloakProcess,
    operator: OperatorProcess,
    namespace: str,
) -> None:
    api = KeycloakApi(keycloak)
    ns, rn = namespace, f"c-{namespace}"
    kubectl.apply(admin_secret(keycloak, ns))
    kubectl.apply(realm(keycloak, ns, "main", realmName=rn))
    ref = {"name": "main"}
    kubectl.apply(client(ns, "web", ref, "web", **settings()))
    # A client naming a scope the realm lacks waits, says which field, and holds nobody else up.
    kubectl.apply(client(ns, "lost", ref, "lost", defaultClientScopes=["no-such-scope"]))
    wait_phase(kubectl, CLIENT_RES, ns, "web", "Ready", timeout=90)
    wait_phase(kubectl, CLIENT_RES, ns, "lost", "Pending")
    lost = kubectl.get(CLIENT_RES, "lost", ns)["status"]["conditions"][0]
    assert "spec.defaultClientScopes" in lost["message"] and "no-such-scope" in lost["message"]
    assert api.client(rn, "lost") is None

    c = api.client(rn, "web")
    assert c is not None
    uuid = c["id"]
    attributes = c["attributes"]
    assert attributes["pkce.code.challenge.method"] == "S256"
    assert attributes["backchannel.logout.url"] == "https://web.example.com/logout"
    assert attributes["backchannel.logout.session.required"] == "true"
    assert attributes["access.token.lifespan"] == "600"
    assert attributes["post.logout.redirect.uris"] == "https://web.example.com/bye"
    assert c["frontchannelLogout"] is False
    assert sorted(c["defaultClientScopes"]) == ["basic", "profile", "roles"]
    assert c["optionalClientScopes"] == ["email"]
    roles = api.call("GET", f"/{rn}/clients/{uuid}/roles?briefRepresentation=false")
    assert sorted((r["name"], r.get("description", "")) for r in roles) == [
        ("reader", ""),
        ("writer", "may write"),
    ]
    assert set(mappers(api, rn, uuid)) == {"team-claim", "api-audience"}

    secret = api.client_secret(rn, uuid)
    claims = token_claims(keycloak, rn, "web", secret)
    assert claims["team"] == "web"
    audience = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
    assert "api.example.com" in audience

    # A hand edit of a mapper is repaired, with an event naming it.
    edited = mappers(api, rn, uuid)["team-claim"]
    edited["config"]["claim.value"] = "hijacked"
    api.call("PUT", f"/{rn}/clients/{uuid}/protocol-mappers/models/{edited['id']}", edited)
    wait_for(
        "mapper repaired",
        lambda: mappers(api, rn, uuid)["team-claim"]["config"]["claim.value"] == "web",
        60,
    )
    repaired = wait_for("drift event", lambda: events(kubectl, ns, reason="DriftRepaired"))
    assert any("protocolMappers/team-claim" in e["message"] for e in repaired)

    # A mapper removed from the spec is deleted in Keycloak; one made by hand stays.
    api.call(
        "POST",
        f"/{rn}/clients/{uuid}/protocol-mappers/models",
        {**HARDCODED, "name": "by-hand", "protocol": "openid-connect"},
    )
    kubectl.apply(client(ns, "web", ref, "web", **{**settings(), "protocolMappers": [HARDCODED]}))
    wait_for("mapper deleted", lambda: set(mappers(api, rn, uuid)) == {"team-claim", "by-hand"}, 60)
    assert "api.example.com" not in str(token_claims(keycloak, rn, "web", secret).get("aud"))

    # Then a quiet resync writes nothing, to Keycloak or to Kubernetes.
    kubectl.run("delete", CLIENT_RES, "lost", "-n", ns)
    wait_for("rounds to settle", replication_settled(kubectl, keycloak, ns), timeout=90)
    before = api.admin_writes()
    versions = {o["metadata"]["resourceVersion"] for o in kubectl.list(CLIENT_RES, ns)}
    start = rounds_seen(keycloak)
    wait_for("three more rounds", lambda: rounds_seen(keycloak) >= start + 3, 60)
    assert api.admin_writes() - before == 0
    assert {o["metadata"]["resourceVersion"] for o in kubectl.list(CLIENT_RES, ns)} == versions
    assert phase(kubectl, CLIENT_RES, ns, "web") == "Ready"
    assert phase(kubectl, REALM_RES, ns, "main") == "Ready"


def sa_mappings(api: KeycloakApi, rn: str, uuid: str) -> tuple[set[str], set[str]]:
    """The realm roles and the realm-management roles mapped directly to the client's service account."""
    user = api.call("GET", f"/{rn}/clients/{uuid}/service-account-user")["id"]
    held = api.call("GET", f"/{rn}/users/{user}/role-mappings") or {}
    realm_roles = {r["name"] for r in held.get("realmMappings") or []}
    rm = (held.get("clientMappings") or {}).get("realm-management") or {}
    return realm_roles, {r["name"] for r in rm.get("mappings") or []}


def test_service_account_roles_need_the_realms_grant_reach_the_token_and_are_repaired(
    kubectl: Kubectl,
    keycloak: KeycloakProcess,
    operator: OperatorProcess,
    namespace: str,
) -> None:
    api = KeycloakApi(keycloak)
    ns, rn = namespace, f"s-{namespace}"
    kubectl.apply(admin_secret(keycloak, ns))
    roles = [{"name": "reporter"}]
    kubectl.apply(realm(keycloak, ns, "main", realmName=rn, roles=roles))
    wanted = {"realm": ["reporter"], "clients": {"realm-management": ["view-users"]}}
    kubectl.apply(
        client(ns, "svc", {"name": "main"}, "svc", serviceAccountsEnabled=True, serviceAccountRoles=wanted)
    )

    # No grant: Forbidden, naming the field and the grant it needs; the client exists, its account holds
    # nothing the operator added.
    wait_phase(kubectl, CLIENT_RES, ns, "svc", "Forbidden", timeout=90)
    message = kubectl.get(CLIENT_RES, "svc", ns)["status"]["conditions"][0]["message"]
    assert "spec.serviceAccountRoles.clients.realm-management" in message and "view-users" in message
    assert "spec.serviceAccountGrants" in message
    c = api.client(rn, "svc")
    assert c is not None
    uuid = c["id"]
    realm_roles, rm_roles = sa_mappings(api, rn, uuid)
    assert rm_roles == set() and "reporter" not in realm_roles
    assert f"default-roles-{rn}" in realm_roles  # Keycloak's own

    # The realm's owner grants it: both roles reach a client_credentials token.
    grant = [{"namespace": ns, "clientId": "realm-management", "roles": ["view-users"]}]
    kubectl.apply(realm(keycloak, ns, "main", realmName=rn, roles=roles, serviceAccountGrants=grant))
    wait_phase(kubectl, CLIENT_RES, ns, "svc", "Ready", timeout=90)
    assert sa_mappings(api, rn, uuid) == ({f"default-roles-{rn}", "reporter"}, {"view-users"})
    claims = token_claims(keycloak, rn, "svc", api.client_secret(rn, uuid))
    assert "reporter" in claims["realm_access"]["roles"]
    assert "view-users" in claims["resource_access"]["realm-management"]["roles"]

    # A mapping removed by hand is restored, with an event naming it.
    user = api.call("GET", f"/{rn}/clients/{uuid}/service-account-user")["id"]
    reporter = api.call("GET", f"/{rn}/roles/reporter")
    api.call("DELETE", f"/{rn}/users/{user}/role-mappings/realm", [reporter])
    wait_for("mapping restored", lambda: "reporter" in sa_mappings(api, rn, uuid)[0], 60)
    repaired = wait_for("drift event", lambda: events(kubectl, ns, name="svc", reason="DriftRepaired"))
    assert any("serviceAccountRoles/realm/reporter" in e["message"] for e in repaired)

    # A quiet resync writes nothing, to Keycloak or to Kubernetes: three rounds counted, not slept through.
    wait_for("rounds to settle", replication_settled(kubectl, keycloak, ns), timeout=90)
    before = api.admin_writes()
    versions = {o["metadata"]["resourceVersion"] for o in kubectl.list(CLIENT_RES, ns)}
    start = rounds_seen(keycloak)
    wait_for("three more rounds", lambda: rounds_seen(keycloak) >= start + 3, 60)
    assert api.admin_writes() - before == 0
    assert {o["metadata"]["resourceVersion"] for o in kubectl.list(CLIENT_RES, ns)} == versions

    # The grant withdrawn: the mapping goes on the next round, said in an event; the client is Forbidden.
    kubectl.apply(realm(keycloak, ns, "main", realmName=rn, roles=roles))
    wait_for("mapping removed", lambda: sa_mappings(api, rn, uuid)[1] == set(), 60)
    assert "reporter" in sa_mappings(api, rn, uuid)[0]
    revoked = wait_for(
        "revoked event", lambda: events(kubectl, ns, name="svc", reason="ServiceAccountRoleRevoked")
    )
    assert "realm-management/view-users" in revoked[0]["message"]
    wait_phase(kubectl, CLIENT_RES, ns, "svc", "Forbidden")

    # A composite client role holding a realm-management role is granted like a service-account role; the
    # service account mapped to it (its own client's role: no grant) gets what it includes in its token.
    auditor = [{"name": "auditor", "composites": {"clients": {"realm-management": ["query-users"]}}}]
    own = {"realm": ["reporter"], "clients": {"svc": ["auditor"]}}
    spec = {"serviceAccountsEnabled": True, "roles": auditor, "serviceAccountRoles": own}
    kubectl.apply(client(ns, "svc", {"name": "main"}, "svc", **spec))
    wait_for(
        "composites refused",
        lambda: (
            "spec.roles[auditor].composites.clients.realm-management"
            in kubectl.get(CLIENT_RES, "svc", ns)["status"]["conditions"][0]["message"]
        ),
        60,
    )
    composites = f"/{rn}/clients/{uuid}/roles/auditor/composites"
    assert api.call("GET", composites) == []
    grant = [{"namespace": ns, "clientId": "realm-management", "roles": ["query-users"]}]
    kubectl.apply(realm(keycloak, ns, "main", realmName=rn, roles=roles, serviceAccountGrants=grant))
    wait_phase(kubectl, CLIENT_RES, ns, "svc", "Ready", timeout=60)
    assert [r["name"] for r in api.call("GET", composites)] == ["query-users"]
    claims = token_claims(keycloak, rn, "svc", api.client_secret(rn, uuid))
    assert "auditor" in claims["resource_access"]["svc"]["roles"]
    assert claims["resource_access"]["realm-management"]["roles"] == ["query-users"]


def test_another_teams_role_and_audience_through_mappers_need_the_realm_owners_grant(
    kubectl: Kubectl,
    keycloak: KeycloakProcess,
    operator: OperatorProcess,
    namespace_factory: Callable[..., str],
) -> None:
    """Issue 26, finding 1, as seen on a real 26.7.3: a team allowed to declare clients, with no grant,
    gives its confidential client mappers naming another team's client role and audience and
    realm-management's realm-admin. They are refused (the field and the grant named) and its token carries
    none of it; with the realm owner's grant the same declarations reach the token, realm-admin still not.

    Two readings the authority relies on, checked on the same Keycloak and tokens: a hard-coded role's text
    is read at its last '.' (`other-client.with.dots.role` is client `other-client.with.dots`'s `role`), and
    the client-role mapper's `${client_id}` in a claim name stands for the clientId it is configured with."""
    api = KeycloakApi(keycloak)
    owner, team = namespace_factory("own"), namespace_factory("team")
    rn = f"m-{owner}"
    kubectl.apply(admin_secret(keycloak, owner))
    kubectl.apply(realm(keycloak, owner, "main", realmName=rn, clientNamespaces=[team]))
    ref = {"name": "main", "namespace": owner}
    kubectl.apply(client(owner, "payments", ref, "payments", roles=[{"name": "write"}]))
    kubectl.apply(client(owner, "dotted", ref, DOTTED, roles=[{"name": "role"}]))
    wait_phase(kubectl, CLIENT_RES, owner, "payments", "Ready", timeout=90)
    wait_phase(kubectl, CLIENT_RES, owner, "dotted", "Ready", timeout=30)
    hijack = [
        {
            "name": "steal-role",
            "protocolMapper": "oidc-hardcoded-role-mapper",
            "config": {"role": "payments.write"},
        },
        {
            "name": "steal-aud",
            "protocolMapper": "oidc-audience-mapper",
            "config": {"included.client.audience": "payments", "access.token.claim": "true"},
        },
        {
            "name": "steal-admin",
            "protocolMapper": "oidc-hardcoded-role-mapper",
            "config": {"role": "realm-management.realm-admin"},
        },
        {
            "name": "steal-dotted",
            "protocolMapper": "oidc-hardcoded-role-mapper",
            "config": {"role": f"{DOTTED}.role"},
        },
        HARDCODED,
        BY_CLIENT,
    ]
    spec = {"serviceAccountsEnabled": True, "protocolMappers": hijack}
    kubectl.apply(client(team, "thief", ref, "thief", **spec))

    def status() -> dict[str, Any]:
        return dict((kubectl.get(CLIENT_RES, "thief", team) or {}).get("status") or {})

    wait_for("the thief Forbidden", lambda: status().get("phase") == "Forbidden", 90)
    message = status()["conditions"][0]["message"]
    assert message.startswith("spec.protocolMappers[steal-admin].config.role: role 'realm-admin' of client")
    assert f"spec.serviceAccountGrants needs {{namespace: {team}, clientId: realm-management" in message
    assert "(and 3 more mappers)" in message
    c = api.client(rn, "thief")
    assert c is not None
    uuid = c["id"]
    assert set(mappers(api, rn, uuid)) == {"team-claim", "by-client"}
    secret = api.client_secret(rn, uuid)
    claims = token_claims(keycloak, rn, "thief", secret)
    assert claims["team"] == "web" and "payments" not in (claims.get("resource_access") or {})
    assert "payments" not in str(claims.get("aud"))
    assert DOTTED not in (claims.get("resource_access") or {})
    # `${client_id}.roles` with the mapper's clientId `account`: the roles under a top-level claim named
    # after that clientId (the service account holds account's roles through the realm's default role),
    # the top-level claim the authority judges.
    assert "view-profile" in claims["account"]["roles"]

    # The realm's owner grants payments' write role: that role and the audience reach the token; realm-admin
    # stays refused and out of Keycloak.
    grant = [
        {"namespace": team, "clientId": "payments", "roles": ["write"]},
        {"namespace": team, "clientId": DOTTED, "roles": ["role"]},
    ]
    kubectl.apply(
        realm(keycloak, owner, "main", realmName=rn, clientNamespaces=[team], serviceAccountGrants=grant)
    )
    granted = {"team-claim", "by-client", "steal-role", "steal-aud", "steal-dotted"}
    wait_for("granted mappers written", lambda: set(mappers(api, rn, uuid)) == granted, 60)
    claims = token_claims(keycloak, rn, "thief", secret)
    assert claims["resource_access"]["payments"]["roles"] == ["write"]
    # Read at the last '.': the dotted client's `role`, the grant the operator asked for.
    assert claims["resource_access"][DOTTED]["roles"] == ["role"]
    assert "payments" in (claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]])
    assert "realm-management" not in claims["resource_access"]
    assert status()["phase"] == "Forbidden" and "steal-admin" in status()["conditions"][0]["message"]

    # The grant withdrawn: the mappers go, and the token is back to the team's own.
    kubectl.apply(realm(keycloak, owner, "main", realmName=rn, clientNamespaces=[team]))
    wait_for("mappers removed", lambda: set(mappers(api, rn, uuid)) == {"team-claim", "by-client"}, 60)
    claims = token_claims(keycloak, rn, "thief", secret)
    assert "payments" not in (claims.get("resource_access") or {}) and "payments" not in str(
        claims.get("aud")
    )
    assert DOTTED not in (claims.get("resource_access") or {})


# --- a SAML client ------------------------------------------------------------------------------------------


SAML_ENTITY = "https://sp.example.com/saml"


def saml_settings(certificate: str) -> dict[str, Any]:
    return {
        "protocol": "saml",
        "redirectUris": ["https://sp.example.com/*"],
        "saml": {
            "assertionConsumerUrlPost": "https://sp.example.com/saml/acs",
            "singleLogoutServiceUrlPost": "https://sp.example.com/saml/slo",
            "nameIdFormat": "email",
            "signAssertions": True,
            "signingCertificate": certificate,
        },
        "protocolMappers": [
            {
                "name": "roles",
                "protocolMapper": "saml-role-list-mapper",
                "config": {"attribute.name": "Role", "single": "true"},
            },
            {
                "name": "mail",
                "protocolMapper": "saml-user-property-mapper",
                "config": {"user.attribute": "email", "attribute.name": "mail"},
            },
        ],
        "roles": [{"name": "viewer"}],
        "defaultClientScopes": ["role_list"],
    }


def fetch_text(url: str, token: str | None = None) -> str:
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as r:
        return str(r.read().decode())


def test_a_saml_client_reaches_keycloak_serves_its_metadata_and_is_repaired(
    kubectl: Kubectl,
    keycloak: KeycloakProcess,
    operator: OperatorProcess,
    namespace: str,
) -> None:
    api = KeycloakApi(keycloak)
    ns, rn = namespace, f"s-{namespace}"
    kubectl.apply(admin_secret(keycloak, ns))
    kubectl.apply(realm(keycloak, ns, "main", realmName=rn))
    ref = {"name": "main"}
    certificate = self_signed_pem("sp.example.com")
    kubectl.apply(client(ns, "sp", ref, SAML_ENTITY, **saml_settings(certificate)))
    # An OIDC scope on a saml client waits, naming the field: Keycloak would answer 204 and attach nothing.
    kubectl.apply(client(ns, "sp-oidc-scope", ref, "sp2", protocol="saml", defaultClientScopes=["email"]))
    wait_phase(kubectl, CLIENT_RES, ns, "sp", "Ready", timeout=90)
    wait_phase(kubectl, CLIENT_RES, ns, "sp-oidc-scope", "Pending")
    pending = kubectl.get(CLIENT_RES, "sp-oidc-scope", ns)["status"]["conditions"][0]
    assert "spec.defaultClientScopes" in pending["message"] and "email" in pending["message"]

    c = api.client(rn, SAML_ENTITY)
    assert c is not None and c["protocol"] == "saml"
    uuid, attributes = c["id"], c["attributes"]
    assert attributes["saml_assertion_consumer_url_post"] == "https://sp.example.com/saml/acs"
    assert attributes["saml_single_logout_service_url_post"] == "https://sp.example.com/saml/slo"
    assert attributes["saml_name_id_format"] == "email"
    assert attributes["saml.assertion.signature"] == "true"
    assert attributes["saml.server.signature"] == "true"
    body = "".join(certificate.strip().splitlines()[1:-1])
    assert attributes["saml.signing.certificate"] == body
    assert "saml.signing.private.key" not in attributes  # given a certificate, Keycloak made no key pair
    assert c["defaultClientScopes"] == ["role_list"]
    found = mappers(api, rn, uuid)
    assert {n: (m["protocol"], m["protocolMapper"]) for n, m in found.items()} == {
        "roles": ("saml", "saml-role-list-mapper"),
        "mail": ("saml", "saml-user-property-mapper"),
    }
    # A saml client has no secret to publish.
    assert kubectl.get("secret", "sp-client-secret", ns) is None

    # The realm's IdP descriptor is served, and Keycloak's SP descriptor of the client names its entity id,
    # its ACS and its certificate.
    idp = fetch_text(f"{keycloak.url}/realms/{rn}/protocol/saml/descriptor")
    assert "IDPSSODescriptor" in idp and f"/realms/{rn}/protocol/saml" in idp
    sp = fetch_text(
        f"{keycloak.url}/admin/realms/{rn}/clients/{uuid}/installation/providers/saml-sp-descriptor",
        api._token(),
    )
    assert f'entityID="{SAML_ENTITY}"' in sp and "https://sp.example.com/saml/acs" in sp and body in sp

    # The API server refuses a protocol change and OIDC fields on a saml client, naming them.
    changed = kubectl.apply(client(ns, "sp", ref, SAML_ENTITY, protocol="openid-connect"), check=False)
    assert changed.returncode != 0 and "spec.protocol cannot change" in changed.stderr
    oidc = kubectl.apply(
        client(ns, "sp", ref, SAML_ENTITY, **saml_settings(certificate), publicClient=True), check=False
    )
    assert oidc.returncode != 0 and "publicClient" in oidc.stderr

    # A hand edit of a SAML setting is repaired, with an event naming it.
    edited = api.call("GET", f"/{rn}/clients/{uuid}")
    edited["attributes"]["saml.server.signature"] = "false"
    edited["attributes"]["saml_assertion_consumer_url_post"] = "https://evil.example.com/acs"
    api.call("PUT", f"/{rn}/clients/{uuid}", edited)

    def repaired_client() -> bool:
        now = api.call("GET", f"/{rn}/clients/{uuid}")["attributes"]
        return bool(
            now["saml.server.signature"] == "true"
            and now["saml_assertion_consumer_url_post"] == "https://sp.example.com/saml/acs"
        )

    wait_for("saml client repaired", repaired_client, 60)
    drift = wait_for("drift event", lambda: events(kubectl, ns, reason="DriftRepaired"))
    assert any("attributes.saml.server.signature" in e["message"] for e in drift)

    # Then a quiet resync writes nothing, to Keycloak or to Kubernetes (counted rounds, not a sleep).
    kubectl.run("delete", CLIENT_RES, "sp-oidc-scope", "-n", ns)
    wait_for("rounds to settle", replication_settled(kubectl, keycloak, ns), timeout=90)
    before, start = api.admin_writes(), rounds_seen(keycloak)
    versions = {o["metadata"]["resourceVersion"] for o in kubectl.list(CLIENT_RES, ns)}
    wait_for("three more rounds", lambda: rounds_seen(keycloak) >= start + 3, timeout=60)
    assert api.admin_writes() - before == 0
    assert {o["metadata"]["resourceVersion"] for o in kubectl.list(CLIENT_RES, ns)} == versions
    assert phase(kubectl, CLIENT_RES, ns, "sp") == "Ready"
