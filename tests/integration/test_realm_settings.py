"""A realm's SMTP, themes, internationalisation, password policy, brute-force, events and admin-events
settings replicated into the real Keycloak server, by the operator running as a real process.

The SMTP password is never readable through Keycloak's admin API (it shows `**********`), so a small SMTP
server here records the login Keycloak makes with it when asked to test the connection: that is where a
changed password Secret is seen to reach Keycloak.

Identity providers (KeycloakIdentityProvider) are tested here too, on the same running server: their client
secret is masked as well, and is seen where Keycloak sends it, at a token endpoint of the test's own
(support/upstream_idp.py). So are authentication flows (KeycloakAuthenticationFlow) and the realm's
flowBindings: a password grant goes through a flow of the test's own (support/flows.py).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from keycloak_operator.kernel import names
from keycloak_operator.models.authentication_flow import BUILT_IN_CONFIGS, BUILT_IN_FLOWS, BUILT_IN_SUBFLOWS
from keycloak_operator.models.identity_provider import MAPPERS_BY_PROVIDER
from localcluster.keycloak import KeycloakProcess
from localcluster.keycloak_api import KeycloakApi
from localcluster.operator_process import OperatorProcess
from tests.integration.support import local_keycloak
from tests.integration.support.certificates import self_signed_pem
from tests.integration.support.flows import (
    FLOW_RES,
    add_user,
    direct_grant,
    executions,
    flow,
    flow_by_alias,
    password_grant,
    raw_executions,
)
from tests.integration.support.kubectl import Kubectl, events, wait_for
from tests.integration.support.smtp_server import SmtpServer
from tests.integration.support.upstream_idp import TokenEndpoint, secret_sent
from tests.integration.test_replication import (
    CLIENT_RES,
    GROUP_RES,
    REALM_RES,
    admin_secret,
    client,
    of_kind,
    phase,
    realm,
    replication_settled,
    rounds_seen,
    wait_phase,
)

pytestmark = pytest.mark.integration

SMTP_SECRET = "smtp-password"
FIRST, SECOND = "first-Pa55word", "second-Pa55word"


@pytest.fixture(scope="module")
def keycloak(kubectl: Kubectl) -> Iterator[KeycloakProcess]:
    yield from local_keycloak.serving(kubectl)


@pytest.fixture(scope="module")
def smtp() -> Iterator[SmtpServer]:
    with SmtpServer() as server:
        yield server


def smtp_secret(namespace: str, password: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": SMTP_SECRET, "namespace": namespace},
        "stringData": {"password": password},
    }


def settings(smtp_port: int) -> dict[str, Any]:
    return {
        "smtp": {
            "host": "127.0.0.1",
            "port": smtp_port,
            "from": "sso@example.com",
            "fromDisplayName": "Team SSO",
            "replyTo": "help@example.com",
            "auth": {"user": "mailer", "passwordSecret": {"name": SMTP_SECRET, "key": "password"}},
        },
        "themes": {
            "login": "keycloak.v2",
            "account": "keycloak.v3",
            "admin": "keycloak.v2",
            "email": "keycloak",
        },
        "internationalization": {"enabled": True, "supportedLocales": ["en", "de"], "defaultLocale": "de"},
        "passwordPolicy": [{"name": "length", "value": "12"}, {"name": "digits"}, {"name": "notUsername"}],
        "bruteForceProtection": {"enabled": True, "failureFactor": 7, "waitIncrementSeconds": 120},
        "events": {"enabled": True, "expirationSeconds": 86400, "enabledTypes": ["LOGIN", "LOGIN_ERROR"]},
        "adminEvents": {"enabled": True, "detailsEnabled": True},
    }


def smtp_login(api: KeycloakApi, realm_name: str, smtp: SmtpServer) -> str | None:
    """The password Keycloak logs in to the SMTP server with now: its "test connection" call, given the
    masked password, uses the stored one (and mails the calling admin, who therefore has an address)."""
    before = len(smtp.logins())
    config = (api.realm(realm_name) or {})["smtpServer"]
    api.call("POST", f"/{realm_name}/testSMTPConnection", config)
    after = smtp.logins()
    return after[-1][1] if len(after) > before else None


def test_every_setting_reaches_keycloak_is_repaired_and_a_changed_secret_is_sent(
    kubectl: Kubectl,
    keycloak: KeycloakProcess,
    smtp: SmtpServer,
    operator: OperatorProcess,
    namespace: str,
) -> None:
    api = KeycloakApi(keycloak)
    ns, rn = namespace, f"s-{namespace}"
    admin = api.call("GET", f"/master/users?username={keycloak.admin_username}&exact=true")[0]
    api.call("PUT", f"/master/users/{admin['id']}", {**admin, "email": "admin@example.com"})
    kubectl.apply(admin_secret(keycloak, ns))
    kubectl.apply(smtp_secret(ns, FIRST))
    kubectl.apply(realm(keycloak, ns, "main", realmName=rn, **settings(smtp.port)))
    # A realm whose password Secret is missing waits, says which field, and holds nobody else up.
    missing = settings(smtp.port)
    missing["smtp"]["auth"]["passwordSecret"]["name"] = "no-such-secret"
    kubectl.apply(realm(keycloak, ns, "other", realmName=f"o-{ns}", **missing))
    wait_phase(kubectl, REALM_RES, ns, "main", "Ready", timeout=90)
    wait_phase(kubectl, REALM_RES, ns, "other", "Pending")
    other = kubectl.get(REALM_RES, "other", ns)["status"]["conditions"][0]
    assert "spec.smtp.auth.passwordSecret" in other["message"] and "no-such-secret" in other["message"]
    assert api.realm(f"o-{ns}") is None

    r = api.realm(rn)
    assert r is not None
    assert r["smtpServer"] == {
        "host": "127.0.0.1",
        "port": str(smtp.port),
        "from": "sso@example.com",
        "fromDisplayName": "Team SSO",
        "replyTo": "help@example.com",
        "ssl": "false",
        "starttls": "false",
        "auth": "true",
        "user": "mailer",
        "password": "**********",
    }
    themes = [r.get(k) for k in ("loginTheme", "accountTheme", "adminTheme", "emailTheme")]
    assert themes == ["keycloak.v2", "keycloak.v3", "keycloak.v2", "keycloak"]
    assert r["internationalizationEnabled"] is True and r["defaultLocale"] == "de"
    assert sorted(r["supportedLocales"]) == ["de", "en"]
    assert r["passwordPolicy"] == "length(12) and digits and notUsername"
    assert (r["bruteForceProtected"], r["failureFactor"], r["waitIncrementSeconds"]) == (True, 7, 120)
    assert (r["permanentLockout"], r["maxFailureWaitSeconds"]) == (False, 900)  # Keycloak's defaults
    assert r["eventsEnabled"] is True and r["eventsExpiration"] == 86400
    assert sorted(r["enabledEventTypes"]) == ["LOGIN", "LOGIN_ERROR"]
    assert r["eventsListeners"] == ["jboss-logging"]
    assert r["adminEventsEnabled"] is True and r["adminEventsDetailsEnabled"] is True
    assert smtp_login(api, rn, smtp) == FIRST

    # A hand edit of a new field is repaired, with an event naming it.
    api.call("PUT", f"/{rn}", {"failureFactor": 99, "passwordPolicy": "length(4)"})
    wait_for("realm repaired", lambda: (api.realm(rn) or {}).get("failureFactor") == 7, 60)
    assert api.realm(rn)["passwordPolicy"] == "length(12) and digits and notUsername"
    repaired = wait_for("drift event", lambda: events(kubectl, ns, reason="DriftRepaired"))
    assert any("failureFactor" in e["message"] and "passwordPolicy" in e["message"] for e in repaired)

    # A changed password Secret reaches Keycloak.
    kubectl.apply(smtp_secret(ns, SECOND))
    wait_for("the new SMTP password in Keycloak", lambda: smtp_login(api, rn, smtp) == SECOND, 60)

    # Then a quiet resync writes nothing, to Keycloak or to Kubernetes.
    wait_for("rounds to settle", replication_settled(kubectl, keycloak, ns), timeout=90)
    before = api.admin_writes()
    versions = {o["metadata"]["resourceVersion"] for o in kubectl.list(REALM_RES, ns)}
    start = rounds_seen(keycloak)
    wait_for("three more rounds", lambda: rounds_seen(keycloak) >= start + 3, 60)
    assert api.admin_writes() - before == 0
    assert {o["metadata"]["resourceVersion"] for o in kubectl.list(REALM_RES, ns)} == versions
    assert phase(kubectl, REALM_RES, ns, "main") == "Ready"

    # The password is in no status, event or operator log line.
    log = operator.log_path.read_text(errors="replace")
    for password in (FIRST, SECOND):
        assert password not in log
        for e in kubectl.list("events", ns):
            assert password not in e.get("message", "")
        for obj in kubectl.list(REALM_RES, ns):
            assert password not in str(obj.get("status"))


# --- What a realm gives every user, and its OTP and WebAuthn policies --------------------------------------

DEFAULTS: dict[str, Any] = {
    "roles": [{"name": "member"}],
    "requiredActions": [
        {"alias": "TERMS_AND_CONDITIONS", "enabled": True, "defaultAction": True, "priority": 5},
        {"alias": "CONFIGURE_TOTP", "enabled": False},
    ],
    "defaultRoles": {
        "realm": ["member", "offline_access"],
        "clients": {"app": ["reader"], "account": ["view-profile"]},
    },
    "defaultGroups": ["staff"],
    "userProfile": {
        "unmanagedAttributePolicy": "ADMIN_VIEW",
        "attributes": [
            {
                "name": "department",
                "displayName": "Department",
                "validations": {"length": {"min": 2, "max": 64}, "pattern": {"pattern": "^[a-z]+$"}},
                "requiredFor": ["admin", "user"],
                "permissions": {"view": ["admin", "user"], "edit": ["admin"]},
                "group": "user-metadata",
            }
        ],
    },
    "otpPolicy": {"type": "totp", "algorithm": "HmacSHA256", "digits": 8, "period": 60},
    "webAuthnPolicy": {
        "rpEntityName": "Team",
        "signatureAlgorithms": ["RS256", "ES256", "ES384"],
        "userVerificationRequirement": "required",
        "timeoutSeconds": 120,
    },
}


def required_action(api: KeycloakApi, rn: str, alias: str) -> dict[str, Any]:
    return dict(api.call("GET", f"/{rn}/authentication/required-actions/{alias}"))


def default_roles(api: KeycloakApi, rn: str) -> set[str]:
    """The default role's composites as `realm/name` or `clientId/name`."""
    role = api.realm(rn)["defaultRole"]
    clients = {c["id"]: c["clientId"] for c in api.clients(rn)}
    return {
        f"{clients[r['containerId']] if r['clientRole'] else 'realm'}/{r['name']}"
        for r in api.call("GET", f"/{rn}/roles-by-id/{role['id']}/composites")
    }


def default_groups(api: KeycloakApi, rn: str) -> list[str]:
    return sorted(g["path"] for g in api.call("GET", f"/{rn}/default-groups"))


def test_required_actions_default_roles_and_groups_and_policies_reach_keycloak_and_a_new_user(
    kubectl: Kubectl, keycloak: KeycloakProcess, operator: OperatorProcess, namespace: str
) -> None:
    api = KeycloakApi(keycloak)
    ns, rn = namespace, f"d-{namespace}"
    kubectl.apply(admin_secret(keycloak, ns))
    kubectl.apply(realm(keycloak, ns, "main", realmName=rn, **DEFAULTS))
    # A realm declaring none of these leaves them as Keycloak (or a hand) has them.
    kubectl.apply(realm(keycloak, ns, "plain", realmName=f"p-{ns}"))
    # Its default group and its client are not declared yet: the realm waits, naming the field.
    wait_phase(kubectl, REALM_RES, ns, "main", "Pending", timeout=90)
    waiting = wait_for(
        "the realm waiting on its default group",
        lambda: [
            c
            for c in (kubectl.get(REALM_RES, "main", ns).get("status") or {}).get("conditions", [])
            if "spec.default" in c.get("message", "")
        ],
    )
    assert any("spec.defaultRoles.clients.app" in c["message"] or "staff" in c["message"] for c in waiting)
    ref = {"name": "main"}
    kubectl.apply(client(ns, "app", ref, "app", publicClient=True, roles=[{"name": "reader"}]))
    kubectl.apply(of_kind(names.GROUP_KIND, ns, "staff", realm=ref, name="Staff"))
    wait_phase(kubectl, GROUP_RES, ns, "staff", "Ready", timeout=90)
    wait_phase(kubectl, CLIENT_RES, ns, "app", "Ready")
    wait_phase(kubectl, REALM_RES, ns, "main", "Ready", timeout=90)
    wait_phase(kubectl, REALM_RES, ns, "plain", "Ready")

    terms = required_action(api, rn, "TERMS_AND_CONDITIONS")
    assert (terms["enabled"], terms["defaultAction"], terms["priority"]) == (True, True, 5)
    assert terms["name"] == "Terms and Conditions"  # the PUT sent back what it read
    totp = required_action(api, rn, "CONFIGURE_TOTP")
    assert (totp["enabled"], totp["priority"]) == (False, 54)  # priority not declared: Keycloak's kept
    assert required_action(api, rn, "VERIFY_EMAIL")["enabled"] is True  # not declared: untouched
    assert default_roles(api, rn) == {
        "realm/member",
        "realm/offline_access",
        "app/reader",
        "account/view-profile",
    }
    assert default_groups(api, rn) == ["/Staff"]
    r = api.realm(rn)
    otp = [r[f"otpPolicy{k}"] for k in ("Type", "Algorithm", "Digits", "Period", "LookAheadWindow")]
    assert otp == ["totp", "HmacSHA256", 8, 60, 1]
    assert sorted(r["webAuthnPolicySignatureAlgorithms"]) == ["ES256", "ES384", "RS256"]
    assert (r["webAuthnPolicyRpEntityName"], r["webAuthnPolicyUserVerificationRequirement"]) == (
        "Team",
        "required",
    )
    assert r["webAuthnPolicyCreateTimeout"] == 120
    prof = api.call("GET", f"/{rn}/users/profile")
    plain_profile = api.call("GET", f"/p-{ns}/users/profile")
    assert prof["unmanagedAttributePolicy"] == "ADMIN_VIEW"
    assert prof["attributes"][:4] == plain_profile["attributes"][:4]  # the built-in ones kept as they were
    assert [a["name"] for a in prof["attributes"]] == [
        "username",
        "email",
        "firstName",
        "lastName",
        "department",
    ]
    dept = prof["attributes"][4]
    assert dept["validations"] == {"length": {"min": 2, "max": 64}, "pattern": {"pattern": "^[a-z]+$"}}
    assert sorted(dept["required"]["roles"]) == ["admin", "user"] and dept["group"] == "user-metadata"

    # A new user (made through the admin API) gets the default roles, group and required action.
    # (department is required for admins too, so the admin API needs it)
    new_user = {"username": "newcomer", "enabled": True, "attributes": {"department": ["sales"]}}
    api.call("POST", f"/{rn}/users", new_user)
    user = api.call("GET", f"/{rn}/users?username=newcomer&exact=true")[0]
    assert "TERMS_AND_CONDITIONS" in user["requiredActions"]
    assert [g["path"] for g in api.call("GET", f"/{rn}/users/{user['id']}/groups")] == ["/Staff"]
    effective = {
        x["name"] for x in api.call("GET", f"/{rn}/users/{user['id']}/role-mappings/realm/composite")
    }
    assert {"member", "offline_access"} <= effective and "uma_authorization" not in effective
    app = api.client(rn, "app")
    assert app is not None
    app_roles = api.call("GET", f"/{rn}/users/{user['id']}/role-mappings/clients/{app['id']}/composite")
    assert [x["name"] for x in app_roles] == ["reader"]

    # Hand edits of each are repaired, with an event naming what was restored.
    api.call(
        "PUT",
        f"/{rn}/authentication/required-actions/TERMS_AND_CONDITIONS",
        {**terms, "defaultAction": False},
    )
    api.call("POST", f"/{rn}/groups", {"name": "rogue"})  # made by hand: left alone, but not a default
    rogue_id = next(g["id"] for g in api.call("GET", f"/{rn}/groups") if g["name"] == "rogue")
    api.call("PUT", f"/{rn}/default-groups/{rogue_id}")
    uma = next(x for x in api.call("GET", f"/{rn}/roles") if x["name"] == "uma_authorization")
    api.call("POST", f"/{rn}/roles-by-id/{r['defaultRole']['id']}/composites", [uma])
    # As the admin console does it: every OTP field (a PUT of some alone leaves Keycloak 26.7.3 answering 500
    # to the realm list, seen here; the operator always sends them all).
    otp_fields = {k: v for k, v in r.items() if k.startswith("otpPolicy")}
    # WebAuthn fields the operator does not manage, set by hand (every two-factor field sent: Keycloak
    # rebuilds the policy from the body); the operator's repair PUT carries the policy and must keep them.
    webauthn = {k: v for k, v in r.items() if k.startswith("webAuthnPolicy") and "Passwordless" not in k}
    origins = ["https://app.example.com"]
    api.call(
        "PUT",
        f"/{rn}",
        {**otp_fields, "otpPolicyDigits": 6, **webauthn, "webAuthnPolicyExtraOrigins": origins},
    )
    assert (api.realm(rn) or {}).get("webAuthnPolicyExtraOrigins") == origins
    edited = {**prof, "attributes": [*prof["attributes"][:4], {**dept, "displayName": "by hand"}]}
    api.call("PUT", f"/{rn}/users/profile", edited)
    wait_for(
        "defaults repaired",
        lambda: (
            required_action(api, rn, "TERMS_AND_CONDITIONS")["defaultAction"] is True
            and default_groups(api, rn) == ["/Staff"]
            and "realm/uma_authorization" not in default_roles(api, rn)
            and (api.realm(rn) or {}).get("otpPolicyDigits") == 8
            and api.call("GET", f"/{rn}/users/profile")["attributes"][4]["displayName"] == "Department"
        ),
        60,
    )
    repaired = wait_for(
        "drift events",
        lambda: [
            e
            for e in events(kubectl, ns, name="main", reason="DriftRepaired")
            if "requiredActions[TERMS_AND_CONDITIONS]" in e["message"]
        ],
    )
    text = " ".join(e["message"] for e in events(kubectl, ns, name="main", reason="DriftRepaired"))
    assert "defaultGroups[-/rogue]" in text and "defaultRoles[-realm/uma_authorization]" in text
    assert repaired and "otpPolicyDigits" in text and "userProfile.attributes[department]" in text
    assert (api.realm(rn) or {}).get("webAuthnPolicyExtraOrigins") == origins  # kept by the repair

    # A realm declaring none of them: a hand edit of its required actions stays.
    plain = required_action(api, f"p-{ns}", "TERMS_AND_CONDITIONS")
    api.call(
        "PUT", f"/p-{ns}/authentication/required-actions/TERMS_AND_CONDITIONS", {**plain, "enabled": True}
    )

    # Then a quiet resync writes nothing, to Keycloak or to Kubernetes.
    wait_for("rounds to settle", replication_settled(kubectl, keycloak, ns), timeout=90)
    before, rounds = api.admin_writes(), rounds_seen(keycloak)
    versions = {o["metadata"]["resourceVersion"] for o in kubectl.list(REALM_RES, ns)}
    wait_for("three more rounds", lambda: rounds_seen(keycloak) >= rounds + 3, 60)
    assert api.admin_writes() - before == 0
    assert {o["metadata"]["resourceVersion"] for o in kubectl.list(REALM_RES, ns)} == versions
    assert phase(kubectl, REALM_RES, ns, "main") == "Ready"
    assert required_action(api, f"p-{ns}", "TERMS_AND_CONDITIONS")["enabled"] is True


# --- KeycloakIdentityProvider -----------------------------------------------------------------------------
#
# Here, not in a module of its own: this module's Keycloak is already running (a new one costs ~20 s). The
# client secret is masked in Keycloak's admin API, so a token endpoint of our own, on loopback, records the
# secret Keycloak sends when a sign-in through the provider comes back with a code: that is where a changed
# Secret is seen to reach Keycloak.

IDP_RES = f"{names.IDENTITY_PROVIDER_PLURAL}.{names.GROUP}"
IDP_SECRET = "upstream-client"
IDP_FIRST, IDP_SECOND = "first-1dp-Secret", "second-1dp-Secret"
IDP_MAPPER = {
    "name": "email",
    "identityProviderMapper": "oidc-user-attribute-idp-mapper",
    "config": {"claim": "email", "user.attribute": "email", "syncMode": "INHERIT"},
}


@pytest.fixture(scope="module")
def upstream() -> Iterator[TokenEndpoint]:
    endpoint = TokenEndpoint()
    yield endpoint
    endpoint.close()


def idp_secret(namespace: str, value: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": IDP_SECRET, "namespace": namespace},
        "stringData": {"client-secret": value},
    }


def identity_provider(
    namespace: str, name: str, realm_ref: dict[str, str], alias: str, upstream_url: str, **spec: Any
) -> dict[str, Any]:
    oidc = {
        "authorizationUrl": f"{upstream_url}/auth",
        "tokenUrl": f"{upstream_url}/token",
        "clientId": "from-keycloak",
        "clientSecret": {"name": IDP_SECRET, "key": "client-secret"},
        **spec.pop("oidc", {}),
    }
    return {
        "apiVersion": names.API_VERSION,
        "kind": names.IDENTITY_PROVIDER_KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"realm": realm_ref, "alias": alias, "providerId": "oidc", "oidc": oidc, **spec},
    }


def idp_in(api: KeycloakApi, rn: str, alias: str) -> dict[str, Any] | None:
    return api.call("GET", f"/{rn}/identity-provider/instances/{alias}")


def idp_mapper(api: KeycloakApi, rn: str, alias: str, name: str) -> dict[str, Any] | None:
    found = api.call("GET", f"/{rn}/identity-provider/instances/{alias}/mappers") or []
    return next((m for m in found if m["name"] == name), None)


def idp_repaired(kubectl: Kubectl, ns: str, name: str, part: str) -> Callable[[], bool]:
    def probe() -> bool:
        found = events(kubectl, ns, name=name, reason="DriftRepaired")
        return any(
            e["involvedObject"]["kind"] == names.IDENTITY_PROVIDER_KIND and part in e["message"]
            for e in found
        )

    return probe


def test_an_identity_provider_reaches_keycloak_with_its_secret_is_repaired_and_leaks_nothing(
    kubectl: Kubectl,
    keycloak: KeycloakProcess,
    upstream: TokenEndpoint,
    operator: OperatorProcess,
    namespace: str,
) -> None:
    api = KeycloakApi(keycloak)
    ns, rn = namespace, f"i-{namespace}"
    kubectl.apply(admin_secret(keycloak, ns))
    kubectl.apply(idp_secret(ns, IDP_FIRST))
    kubectl.apply(realm(keycloak, ns, "main", realmName=rn))
    ref = {"name": "main"}
    oidc = {
        "issuer": "https://upstream.example.com",
        "jwksUrl": "https://upstream.example.com/jwks",
        "defaultScopes": ["openid", "email"],
        "syncMode": "IMPORT",
        "validateSignature": True,
        "pkceEnabled": True,
    }
    kubectl.apply(
        identity_provider(
            ns,
            "upstream",
            ref,
            "upstream",
            upstream.url,
            displayName="Upstream",
            trustEmail=True,
            guiOrder=3,
            oidc=oidc,
            mappers=[IDP_MAPPER],
        )
    )
    # One whose Secret is missing waits, naming the field, and holds nobody else up.
    missing = identity_provider(ns, "other", ref, "other", upstream.url)
    missing["spec"]["oidc"]["clientSecret"]["name"] = "no-such-secret"
    kubectl.apply(missing)
    wait_phase(kubectl, IDP_RES, ns, "upstream", "Ready", timeout=90)
    wait_phase(kubectl, IDP_RES, ns, "other", "Pending")
    other = kubectl.get(IDP_RES, "other", ns)["status"]["conditions"][0]["message"]
    assert "spec.oidc.clientSecret" in other and "no-such-secret" in other
    assert idp_in(api, rn, "other") is None

    p = idp_in(api, rn, "upstream")
    assert p is not None
    assert (p["providerId"], p["displayName"], p["enabled"], p["trustEmail"]) == (
        "oidc",
        "Upstream",
        True,
        True,
    )
    config = p["config"]
    assert config["kcop.dev.kind"] == names.IDENTITY_PROVIDER_KIND and config["kcop.dev.namespace"] == ns
    assert config["kcop.dev.name"] == "upstream" and len(config["kcop.dev.content-hash"]) == 64
    assert config["clientSecret"] == "**********"  # set, and masked
    assert (config["tokenUrl"], config["clientId"]) == (f"{upstream.url}/token", "from-keycloak")
    assert (config["defaultScope"], config["syncMode"], config["guiOrder"]) == ("openid email", "IMPORT", "3")
    assert (config["pkceEnabled"], config["pkceMethod"], config["useJwksUrl"]) == ("true", "S256", "true")
    assert kubectl.get(IDP_RES, "upstream", ns)["status"]["keycloakId"] == "upstream"
    offered = api.call("GET", f"/{rn}/identity-provider/instances/upstream/mapper-types")
    assert MAPPERS_BY_PROVIDER["oidc"] <= set(offered)  # the CRD's enum, against this Keycloak
    mapper = idp_mapper(api, rn, "upstream", "email")
    assert mapper is not None and mapper["identityProviderMapper"] == "oidc-user-attribute-idp-mapper"
    assert mapper["config"]["claim"] == "email" and mapper["config"]["user.attribute"] == "email"
    assert secret_sent(keycloak, rn, "upstream", upstream) == IDP_FIRST

    # A hand edit of the provider, then of its mapper: each repaired, with an event naming what.
    edited = {**p, "displayName": "hijacked", "config": {**config, "clientId": "hijacked"}}
    api.call("PUT", f"/{rn}/identity-provider/instances/upstream", edited)
    wait_for(
        "provider repaired", lambda: (idp_in(api, rn, "upstream") or {}).get("displayName") == "Upstream", 60
    )
    assert idp_in(api, rn, "upstream")["config"]["clientId"] == "from-keycloak"
    wait_for("provider drift event", idp_repaired(kubectl, ns, "upstream", "attributes.clientId"), 30)
    mapper["config"]["claim"] = "hijacked"
    api.call("PUT", f"/{rn}/identity-provider/instances/upstream/mappers/{mapper['id']}", mapper)
    wait_for(
        "mapper repaired",
        lambda: (idp_mapper(api, rn, "upstream", "email") or {})["config"]["claim"] == "email",
        60,
    )
    wait_for("mapper drift event", idp_repaired(kubectl, ns, "upstream", "mappers/email"), 30)
    # The repair sent the secret again, unchanged.
    assert secret_sent(keycloak, rn, "upstream", upstream) == IDP_FIRST

    # A changed Secret reaches Keycloak.
    kubectl.apply(idp_secret(ns, IDP_SECOND))
    wait_for(
        "the new client secret in Keycloak",
        lambda: secret_sent(keycloak, rn, "upstream", upstream) == IDP_SECOND,
        60,
    )

    # Then a quiet resync writes nothing, to Keycloak or to Kubernetes: measured over three rounds.
    wait_for("rounds to settle", replication_settled(kubectl, keycloak, ns), timeout=90)
    before, rounds = api.admin_writes(), rounds_seen(keycloak)
    versions = {
        o["metadata"]["resourceVersion"] for o in [*kubectl.list(IDP_RES, ns), *kubectl.list(REALM_RES, ns)]
    }
    wait_for("three more rounds", lambda: rounds_seen(keycloak) >= rounds + 3, 60)
    assert api.admin_writes() - before == 0
    after = {
        o["metadata"]["resourceVersion"] for o in [*kubectl.list(IDP_RES, ns), *kubectl.list(REALM_RES, ns)]
    }
    assert after == versions
    assert phase(kubectl, IDP_RES, ns, "upstream") == "Ready"

    # The secret is in no status, event or operator log line.
    log = operator.log_path.read_text(errors="replace")
    for value in (IDP_FIRST, IDP_SECOND):
        assert value not in log
        for e in kubectl.list("events", ns):
            assert value not in e.get("message", "")
        for obj in kubectl.list(IDP_RES, ns):
            assert value not in json.dumps(obj.get("status"))

    # Deleting leaves Keycloak clean, no resource stuck.
    kubectl.run("delete", IDP_RES, "upstream", "other", "-n", ns, "--wait=false")
    wait_for("providers gone", lambda: not kubectl.list(IDP_RES, ns), 60)
    assert idp_in(api, rn, "upstream") is None
    assert api.call("GET", f"/{rn}/identity-provider/instances") == []


def test_seed_003_the_same_alias_in_two_namespaces_one_deleted_the_other_untouched(
    kubectl: Kubectl,
    keycloak: KeycloakProcess,
    upstream: TokenEndpoint,
    operator: OperatorProcess,
    namespace_factory: Callable[..., str],
) -> None:
    api = KeycloakApi(keycloak)
    foo, bar = namespace_factory("foo"), namespace_factory("bar")
    rn = f"i-{foo}"
    kubectl.apply(admin_secret(keycloak, foo))
    kubectl.apply(realm(keycloak, foo, "main", realmName=rn, identityProviderNamespaces=[bar]))
    ref = {"name": "main", "namespace": foo}
    for ns in (foo, bar):
        kubectl.apply(idp_secret(ns, f"{ns}-secret"))
    kubectl.apply(identity_provider(foo, "shared", ref, "shared", upstream.url, displayName="foo's"))
    wait_phase(kubectl, IDP_RES, foo, "shared", "Ready", timeout=90)
    kubectl.apply(identity_provider(bar, "shared", ref, "shared", upstream.url, displayName="bar's"))
    wait_phase(kubectl, IDP_RES, bar, "shared", "Conflict")
    held = idp_in(api, rn, "shared")
    assert held is not None and held["displayName"] == "foo's"
    conflict = kubectl.get(IDP_RES, "shared", bar)["status"]["conditions"][0]["message"]
    assert f"a {names.IDENTITY_PROVIDER_KIND} of another namespace" in conflict and foo not in conflict
    assert secret_sent(keycloak, rn, "shared", upstream) == f"{foo}-secret"

    # bar's goes: its finalizer is released, and foo's object is not touched at all.
    kubectl.run("delete", IDP_RES, "shared", "-n", bar, "--wait=false")
    wait_for("bar's provider gone", lambda: kubectl.get(IDP_RES, "shared", bar) is None, 60)
    wait_for("rounds to settle", replication_settled(kubectl, keycloak, foo), timeout=90)
    assert idp_in(api, rn, "shared") == held
    assert phase(kubectl, IDP_RES, foo, "shared") == "Ready"

    # The other way round: foo's goes, its object with it; bar, declaring again, then takes the alias.
    kubectl.apply(identity_provider(bar, "shared", ref, "shared", upstream.url, displayName="bar's"))
    wait_phase(kubectl, IDP_RES, bar, "shared", "Conflict")
    kubectl.run("delete", IDP_RES, "shared", "-n", foo, "--wait=false")
    wait_phase(kubectl, IDP_RES, bar, "shared", "Ready", timeout=60)
    taken = idp_in(api, rn, "shared")
    assert taken is not None and taken["internalId"] != held["internalId"] and taken["displayName"] == "bar's"
    assert taken["config"]["kcop.dev.namespace"] == bar
    assert secret_sent(keycloak, rn, "shared", upstream) == f"{bar}-secret"  # bar's own Secret, not foo's
    assert kubectl.get(IDP_RES, "shared", foo) is None
    kubectl.run("delete", IDP_RES, "shared", "-n", bar, "--wait=false")
    wait_for("bar's provider gone", lambda: kubectl.get(IDP_RES, "shared", bar) is None, 60)
    assert api.call("GET", f"/{rn}/identity-provider/instances") == []


HOSTILE_IDPS = [
    ("a slash in the alias", {"alias": "a/b"}, "spec.alias"),
    ("an unknown provider", {"providerId": "github"}, "spec.providerId"),
    ("a SAML provider without its saml block", {"providerId": "saml"}, "spec.saml"),
    ("plain http off loopback", {"oidc": {"tokenUrl": "http://up.example.com/t"}}, "spec.oidc.tokenUrl"),
    (
        "credentials in a URL",
        {"oidc": {"authorizationUrl": "https://u:p@up.example.com/a"}},
        "authorizationUrl",
    ),
    ("a secret with private_key_jwt", {"oidc": {"clientAuthMethod": "private_key_jwt"}}, "clientSecret"),
    ("an unknown sync mode", {"oidc": {"syncMode": "SOMETIMES"}}, "spec.oidc.syncMode"),
    (
        "a mapper type outside the enum",
        {"mappers": [{**IDP_MAPPER, "identityProviderMapper": "x"}]},
        "spec.mappers[0]",
    ),
    (
        "a mapper config key with a slash",
        {"mappers": [{**IDP_MAPPER, "config": {"a/b": "x"}}]},
        "config keys",
    ),
]


@pytest.mark.parametrize(("case", "spec", "field"), HOSTILE_IDPS, ids=[h[0] for h in HOSTILE_IDPS])
def test_a_hostile_identity_provider_is_refused_by_the_api_server_naming_the_field(
    kubectl: Kubectl, crds: None, namespace: str, case: str, spec: dict[str, Any], field: str
) -> None:
    obj = identity_provider(namespace, "x", {"name": "main"}, "x", "https://up.example.com")
    for key, value in spec.items():
        obj["spec"][key] = {**obj["spec"][key], **value} if key == "oidc" else value
    result = kubectl.apply(obj, check=False)
    assert result.returncode != 0, f"{case}: accepted"
    assert field in result.stderr, result.stderr
    # The smallest valid one is accepted, and printed with its columns.
    kubectl.apply(identity_provider(namespace, "plain", {"name": "main"}, "plain", "https://up.example.com"))
    printed = kubectl.run("get", IDP_RES, "plain", "-n", namespace).stdout
    assert printed.split()[:5] == ["NAME", "ALIAS", "REALM", "PROVIDER", "PHASE"]


# --- authentication flows (KeycloakAuthenticationFlow, KeycloakRealm spec.flowBindings) ---------------------


def flow_event(kubectl: Kubectl, ns: str, name: str, reason: str) -> Callable[[], bool]:
    def probe() -> bool:
        found = events(kubectl, ns, name=name, reason=reason)
        return any(e["involvedObject"]["kind"] == names.AUTHENTICATION_FLOW_KIND for e in found)

    return probe


def test_a_flow_reaches_keycloak_in_order_is_bound_signs_in_is_repaired_and_unbound_before_it_goes(
    kubectl: Kubectl, keycloak: KeycloakProcess, operator: OperatorProcess, namespace: str
) -> None:
    api = KeycloakApi(keycloak)
    ns, rn = namespace, f"f-{namespace}"
    kubectl.apply(admin_secret(keycloak, ns))
    bindings = {"directGrant": "direct"}  # a KeycloakAuthenticationFlow of the realm's namespace, by name
    kubectl.apply(realm(keycloak, ns, "main", realmName=rn, flowBindings=bindings))
    # Bound before the flow exists: the realm waits, naming the field; its client is written all the same.
    wait_phase(kubectl, REALM_RES, ns, "main", "Pending", timeout=90)
    message = kubectl.get(REALM_RES, "main", ns)["status"]["conditions"][0]["message"]
    assert "spec.flowBindings.directGrant" in message and f"{ns}/direct" in message
    kubectl.apply(
        client(ns, "cli", {"name": "main"}, "cli", publicClient=True, directAccessGrantsEnabled=True)
    )
    wait_phase(kubectl, CLIENT_RES, ns, "cli", "Ready", timeout=60)

    kubectl.apply(flow(ns, "direct", {"name": "main"}, "team direct", executions=direct_grant("team otp")))
    wait_phase(kubectl, FLOW_RES, ns, "direct", "Ready", timeout=60)
    wanted = [
        (0, "direct-grant-validate-username", "REQUIRED"),
        (0, "direct-grant-validate-password", "REQUIRED"),
        (0, "team otp", "CONDITIONAL"),
        (1, "conditional-user-configured", "REQUIRED"),
        (1, "direct-grant-validate-otp", "REQUIRED"),
    ]
    assert executions(api, rn, "team direct") == wanted
    wait_phase(kubectl, REALM_RES, ns, "main", "Ready", timeout=60)
    assert (api.realm(rn) or {})["directGrantFlow"] == "team direct"
    add_user(api, rn, "alice", "Pa55-word-alice")
    assert password_grant(keycloak, rn, "cli", "alice", "Pa55-word-alice") == 200
    assert password_grant(keycloak, rn, "cli", "alice", "wrong") == 400  # invalid_grant

    # CIBA and PAR settings made by hand (as the admin console does: every attribute sent) survive the
    # operator's binding writes: Keycloak 26.7.3 resets them to their defaults on any realm PUT whose
    # attributes do not name them, even one with no attributes at all.
    hand_set = {
        "cibaBackchannelTokenDeliveryMode": "ping",
        "cibaExpiresIn": "300",
        "parRequestUriLifespan": "90",
    }
    api.call("PUT", f"/{rn}", {"attributes": {**(api.realm(rn) or {})["attributes"], **hand_set}})

    def hand_set_kept() -> bool:
        attributes = (api.realm(rn) or {}).get("attributes") or {}
        return all(attributes.get(k) == v for k, v in hand_set.items())

    assert hand_set_kept()

    # Hand edits: the password step disabled, then the subflow moved up; each repaired by a flow built beside
    # and swapped in (a new id, the binding moved to it, the aliases renamed back), with an event.
    first = flow_by_alias(api, rn, "team direct")
    step = next(e for e in raw_executions(api, rn, "team direct") if e.get("providerId") == wanted[1][1])
    api.call(
        "PUT", f"/{rn}/authentication/flows/team%20direct/executions", {**step, "requirement": "DISABLED"}
    )
    wait_for("requirement repaired", lambda: executions(api, rn, "team direct") == wanted, 60)
    wait_for("drift event", flow_event(kubectl, ns, "direct", "DriftRepaired"), 30)
    swapped = flow_by_alias(api, rn, "team direct")
    assert first is not None and swapped is not None and swapped["id"] != first["id"]
    assert (api.realm(rn) or {})["directGrantFlow"] == "team direct"
    assert hand_set_kept(), (api.realm(rn) or {}).get("attributes")  # the binding moved to the new flow
    assert password_grant(keycloak, rn, "cli", "alice", "wrong") == 400
    sub = next(e for e in raw_executions(api, rn, "team direct") if e["displayName"] == "team otp")
    api.call("POST", f"/{rn}/authentication/executions/{sub['id']}/raise-priority")
    assert executions(api, rn, "team direct") != wanted
    wait_for("order repaired", lambda: executions(api, rn, "team direct") == wanted, 60)
    assert password_grant(keycloak, rn, "cli", "alice", "Pa55-word-alice") == 200
    assert not [f for f in api.call("GET", f"/{rn}/authentication/flows") or [] if "~" in f["alias"]]

    # A quiet resync writes nothing: measured over three rounds.
    wait_for("rounds to settle", replication_settled(kubectl, keycloak, ns), timeout=90)
    before, rounds = api.admin_writes(), rounds_seen(keycloak)
    wait_for("three more rounds", lambda: rounds_seen(keycloak) >= rounds + 3, 60)
    assert api.admin_writes() - before == 0
    assert (
        phase(kubectl, FLOW_RES, ns, "direct") == "Ready" and phase(kubectl, REALM_RES, ns, "main") == "Ready"
    )

    # Deleting the bound flow's resource: the binding returns to the built-in first, then the flow goes.
    kubectl.run("delete", FLOW_RES, "direct", "-n", ns, "--wait=false")
    wait_for("flow resource gone", lambda: kubectl.get(FLOW_RES, "direct", ns) is None, 60)
    assert flow_by_alias(api, rn, "team direct") is None and flow_by_alias(api, rn, "team otp") is None
    assert (api.realm(rn) or {})["directGrantFlow"] == "direct grant"
    assert hand_set_kept(), (api.realm(rn) or {}).get("attributes")  # the binding returned to the built-in
    assert password_grant(keycloak, rn, "cli", "alice", "Pa55-word-alice") == 200
    wait_phase(kubectl, REALM_RES, ns, "main", "Pending", timeout=60)
    kubectl.apply(realm(keycloak, ns, "main", realmName=rn))
    wait_phase(kubectl, REALM_RES, ns, "main", "Ready", timeout=60)


def test_a_flow_a_provider_uses_deleted_first_waits_naming_the_provider_then_goes_with_it(
    kubectl: Kubectl, keycloak: KeycloakProcess, operator: OperatorProcess, namespace: str
) -> None:
    """Keycloak refuses to delete a flow an identity provider names as its first-login flow: a flow deleted
    before its provider waits, Deleting and naming the provider, with no refused delete each round, and
    goes once the provider has gone (issue 16: deleting in any order leaves nothing stuck)."""
    api = KeycloakApi(keycloak)
    ns, rn = namespace, f"u-{namespace}"
    kubectl.apply(admin_secret(keycloak, ns))
    kubectl.apply(idp_secret(ns, IDP_FIRST))
    kubectl.apply(realm(keycloak, ns, "main", realmName=rn))
    steps = [{"authenticator": "idp-create-user-if-unique", "requirement": "ALTERNATIVE"}]
    kubectl.apply(flow(ns, "linking", {"name": "main"}, "team linking", executions=steps))
    wait_phase(kubectl, FLOW_RES, ns, "linking", "Ready", timeout=90)
    provider = identity_provider(
        ns,
        "upstream",
        {"name": "main"},
        "upstream",
        "https://up.example.com",
        firstBrokerLoginFlowAlias="team linking",
    )
    kubectl.apply(provider)
    wait_phase(kubectl, IDP_RES, ns, "upstream", "Ready", timeout=60)
    linking = flow_by_alias(api, rn, "team linking")
    assert linking is not None
    with pytest.raises(urllib.error.HTTPError):  # Keycloak's refusal, which the operator must not repeat
        api.call("DELETE", f"/{rn}/authentication/flows/{linking['id']}")

    kubectl.run("delete", FLOW_RES, "linking", "-n", ns, "--wait=false")
    wait_phase(kubectl, FLOW_RES, ns, "linking", "Deleting", timeout=60)
    message = kubectl.get(FLOW_RES, "linking", ns)["status"]["conditions"][0]["message"]
    assert "identity provider 'upstream' (firstBrokerLoginFlowAlias) uses flow 'team linking'" in message
    wait_for("rounds to settle", replication_settled(kubectl, keycloak, ns), timeout=90)
    before, rounds = api.admin_writes(), rounds_seen(keycloak)
    wait_for("two more rounds", lambda: rounds_seen(keycloak) >= rounds + 2, 60)
    assert api.admin_writes() - before == 0  # no delete tried again and again
    assert not events(kubectl, ns, name="linking", reason="WriteFailed")
    assert flow_by_alias(api, rn, "team linking") is not None

    kubectl.run("delete", IDP_RES, "upstream", "-n", ns, "--wait=false")
    wait_for("flow resource gone", lambda: kubectl.get(FLOW_RES, "linking", ns) is None, 60)
    assert idp_in(api, rn, "upstream") is None and flow_by_alias(api, rn, "team linking") is None


def _built_in_aliases(api: KeycloakApi, rn: str) -> tuple[set[str], set[str], set[str]]:
    """A realm's flows as Keycloak made them: top-level aliases, subflow aliases, config aliases."""
    tops = {f["alias"] for f in api.call("GET", f"/{rn}/authentication/flows") or []}
    subflows: set[str] = set()
    configs: set[str] = set()
    for top in tops:
        for e in raw_executions(api, rn, top):
            if e.get("authenticationFlow"):
                subflows.add(e["displayName"])
            if e.get("authenticationConfig"):
                config = api.call("GET", f"/{rn}/authentication/config/{e['authenticationConfig']}")
                configs.add(config["alias"])
    return tops, subflows, configs


def test_seed_003_flows_the_same_alias_in_two_namespaces_and_a_built_in_alias_are_conflicts(
    kubectl: Kubectl,
    keycloak: KeycloakProcess,
    operator: OperatorProcess,
    namespace_factory: Callable[..., str],
) -> None:
    api = KeycloakApi(keycloak)
    foo, bar = namespace_factory("foo"), namespace_factory("bar")
    rn = f"f-{foo}"
    kubectl.apply(admin_secret(keycloak, foo))
    kubectl.apply(realm(keycloak, foo, "main", realmName=rn, flowNamespaces=[bar]))
    ref = {"name": "main", "namespace": foo}
    steps = [{"authenticator": "auth-cookie", "requirement": "ALTERNATIVE"}]
    # Keycloak's own flows, subflows and configs in a new realm (26.x): every one is refused or a Conflict.
    wait_phase(kubectl, REALM_RES, foo, "main", "Ready", timeout=90)
    tops, subflows, configs = _built_in_aliases(api, rn)
    assert tops <= BUILT_IN_FLOWS, tops - BUILT_IN_FLOWS
    assert {a.lower() for a in subflows} <= BUILT_IN_SUBFLOWS, subflows
    assert configs <= BUILT_IN_CONFIGS, configs
    kubectl.apply(flow(foo, "shared", ref, "shared", description="foo's", executions=steps))
    wait_phase(kubectl, FLOW_RES, foo, "shared", "Ready", timeout=90)
    kubectl.apply(flow(bar, "shared", ref, "shared", description="bar's"))
    kubectl.apply(flow(foo, "builtin", ref, "browser"))
    wait_phase(kubectl, FLOW_RES, bar, "shared", "Conflict")
    wait_phase(kubectl, FLOW_RES, foo, "builtin", "Conflict")
    held = flow_by_alias(api, rn, "shared")
    assert held is not None and held["description"] == "foo's"
    builtin = flow_by_alias(api, rn, "browser")
    assert builtin is not None and builtin["builtIn"]

    # bar's goes: foo's flow is not touched; the built-in neither when its declaration goes.
    kubectl.run("delete", FLOW_RES, "shared", "-n", bar, "--wait=false")
    kubectl.run("delete", FLOW_RES, "builtin", "-n", foo, "--wait=false")
    wait_for("bar's flow gone", lambda: kubectl.get(FLOW_RES, "shared", bar) is None, 60)
    wait_for("the built-in's declaration gone", lambda: kubectl.get(FLOW_RES, "builtin", foo) is None, 60)
    wait_for("rounds to settle", replication_settled(kubectl, keycloak, foo), timeout=90)
    assert flow_by_alias(api, rn, "shared") == held and flow_by_alias(api, rn, "browser") == builtin
    assert executions(api, rn, "shared") == [(0, "auth-cookie", "ALTERNATIVE")]

    # foo's goes with its flow; bar, declaring again, then takes the alias (a flow with another id).
    kubectl.apply(flow(bar, "shared", ref, "shared", description="bar's"))
    wait_phase(kubectl, FLOW_RES, bar, "shared", "Conflict")
    kubectl.run("delete", FLOW_RES, "shared", "-n", foo, "--wait=false")
    wait_phase(kubectl, FLOW_RES, bar, "shared", "Ready", timeout=60)
    taken = flow_by_alias(api, rn, "shared")
    assert taken is not None and taken["id"] != held["id"] and taken["description"] == "bar's"
    kubectl.run("delete", FLOW_RES, "shared", "-n", bar, "--wait=false")
    wait_for("bar's flow gone", lambda: kubectl.get(FLOW_RES, "shared", bar) is None, 60)
    assert flow_by_alias(api, rn, "shared") is None


def saml_provider(namespace: str, name: str, realm_ref: dict[str, str], certificate: str) -> dict[str, Any]:
    return {
        "apiVersion": names.API_VERSION,
        "kind": names.IDENTITY_PROVIDER_KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "realm": realm_ref,
            "alias": "corp",
            "providerId": "saml",
            "displayName": "Corporate SSO",
            "saml": {
                "idpEntityId": "https://idp.example.com/saml",
                "entityId": "https://kc.example.com/sp",
                "singleSignOnServiceUrl": "https://idp.example.com/saml/sso",
                "singleLogoutServiceUrl": "https://idp.example.com/saml/slo",
                "nameIdPolicyFormat": "email",
                "principalType": "FRIENDLY_ATTRIBUTE",
                "principalAttribute": "uid",
                "wantAssertionsSigned": True,
                "validateSignature": True,
                "signingCertificates": [certificate],
                "postBindingResponse": True,
                "postBindingAuthnRequest": True,
                "forceAuthn": True,
                "syncMode": "IMPORT",
            },
            "mappers": [
                {
                    "name": "username",
                    "identityProviderMapper": "saml-username-idp-mapper",
                    "config": {"template": "${ALIAS}.${ATTRIBUTE.uid}", "target": "LOCAL"},
                },
                {
                    "name": "mail",
                    "identityProviderMapper": "saml-user-attribute-idp-mapper",
                    "config": {"attribute.name": "mail", "user.attribute": "email", "syncMode": "INHERIT"},
                },
            ],
        },
    }


def test_a_saml_identity_provider_reaches_keycloak_is_repaired_and_a_quiet_resync_writes_nothing(
    kubectl: Kubectl,
    keycloak: KeycloakProcess,
    operator: OperatorProcess,
    namespace: str,
) -> None:
    api = KeycloakApi(keycloak)
    ns, rn = namespace, f"sp-{namespace}"
    kubectl.apply(admin_secret(keycloak, ns))
    kubectl.apply(realm(keycloak, ns, "main", realmName=rn))
    certificate = self_signed_pem("idp.example.com")
    kubectl.apply(saml_provider(ns, "corp", {"name": "main"}, certificate))
    wait_phase(kubectl, IDP_RES, ns, "corp", "Ready", timeout=90)

    p = idp_in(api, rn, "corp")
    assert p is not None and (p["providerId"], p["displayName"]) == ("saml", "Corporate SSO")
    config = p["config"]
    assert config["kcop.dev.kind"] == names.IDENTITY_PROVIDER_KIND and "clientSecret" not in config
    assert config["idpEntityId"] == "https://idp.example.com/saml"
    assert config["entityId"] == "https://kc.example.com/sp"
    assert config["singleSignOnServiceUrl"] == "https://idp.example.com/saml/sso"
    assert config["singleLogoutServiceUrl"] == "https://idp.example.com/saml/slo"
    assert config["nameIDPolicyFormat"] == "urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress"
    assert (config["principalType"], config["principalAttribute"]) == ("FRIENDLY_ATTRIBUTE", "uid")
    assert config["signingCertificate"] == "".join(certificate.strip().splitlines()[1:-1])
    for flag in ("wantAssertionsSigned", "validateSignature", "postBindingResponse", "forceAuthn"):
        assert config[flag] == "true", flag
    assert (config["wantAssertionsEncrypted"], config["syncMode"]) == ("false", "IMPORT")
    offered = api.call("GET", f"/{rn}/identity-provider/instances/corp/mapper-types")
    assert MAPPERS_BY_PROVIDER["saml"] <= set(offered)  # the CRD's enum, against this Keycloak
    mapper = idp_mapper(api, rn, "corp", "username")
    assert mapper is not None and mapper["identityProviderMapper"] == "saml-username-idp-mapper"
    assert (idp_mapper(api, rn, "corp", "mail") or {})["config"]["attribute.name"] == "mail"
    # Keycloak serves this realm's SP metadata for the provider, with the declared entity id.
    with urllib.request.urlopen(
        f"{keycloak.url}/realms/{rn}/broker/corp/endpoint/descriptor", timeout=30
    ) as r:
        assert 'entityID="https://kc.example.com/sp"' in r.read().decode()

    # The API server refuses a change of providerId.
    changed = saml_provider(ns, "corp", {"name": "main"}, certificate)
    changed["spec"]["providerId"] = "oidc"
    refused = kubectl.apply(changed, check=False)
    assert refused.returncode != 0 and "spec.providerId cannot change" in refused.stderr
    # ... and a provider that would check no signatures (a forged response would sign anyone in).
    unsigned = saml_provider(ns, "corp", {"name": "main"}, certificate)
    unsigned["spec"]["saml"]["validateSignature"] = False
    refused = kubectl.apply(unsigned, check=False)
    assert refused.returncode != 0 and "validateSignature" in refused.stderr

    # A hand edit is repaired, with an event naming the key.
    api.call(
        "PUT",
        f"/{rn}/identity-provider/instances/corp",
        {**p, "config": {**config, "idpEntityId": "https://evil.example.com", "validateSignature": "false"}},
    )
    wait_for(
        "saml provider repaired",
        lambda: (idp_in(api, rn, "corp") or {})["config"]["idpEntityId"] == "https://idp.example.com/saml",
        60,
    )
    assert idp_in(api, rn, "corp")["config"]["validateSignature"] == "true"
    wait_for("provider drift event", idp_repaired(kubectl, ns, "corp", "attributes.idpEntityId"), 30)

    # Then a quiet resync writes nothing, to Keycloak or to Kubernetes: measured over three rounds.
    wait_for("rounds to settle", replication_settled(kubectl, keycloak, ns), timeout=90)
    before, rounds = api.admin_writes(), rounds_seen(keycloak)
    versions = {o["metadata"]["resourceVersion"] for o in kubectl.list(IDP_RES, ns)}
    wait_for("three more rounds", lambda: rounds_seen(keycloak) >= rounds + 3, 60)
    assert api.admin_writes() - before == 0
    assert {o["metadata"]["resourceVersion"] for o in kubectl.list(IDP_RES, ns)} == versions
    assert phase(kubectl, IDP_RES, ns, "corp") == "Ready"

    kubectl.run("delete", IDP_RES, "corp", "-n", ns, "--wait=false")
    wait_for("provider gone", lambda: not kubectl.list(IDP_RES, ns), 60)
    assert idp_in(api, rn, "corp") is None
