"""A realm's SMTP, themes, internationalisation, password policy, brute-force, events and admin-events
settings replicated into the real Keycloak server, by the operator running as a real process.

The SMTP password is never readable through Keycloak's admin API (it shows `**********`), so a small SMTP
server here records the login Keycloak makes with it when asked to test the connection: that is where a
changed password Secret is seen to reach Keycloak.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from localcluster.keycloak import KeycloakProcess
from tests.integration.support import local_keycloak
from tests.integration.support.keycloak_api import KeycloakApi
from tests.integration.support.kubectl import Kubectl, events, wait_for
from tests.integration.support.operator_process import OperatorProcess
from tests.integration.support.smtp_server import SmtpServer
from tests.integration.test_replication import (
    REALM_RES,
    admin_secret,
    phase,
    realm,
    replication_settled,
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
    time.sleep(16)  # three resyncs at 5 s
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
