"""KeycloakClientScope against the real Keycloak server, replicated by the operator running as a real process:
the scope and its mapper reach Keycloak, a client attaching it gets tokens carrying the mapper's claim, hand
edits are repaired with events, a quiet resync writes nothing, and seed 003: the same scope name declared in
two namespaces, one deleted, the other's object untouched."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from keycloak_operator.core import names
from localcluster.keycloak import KeycloakProcess
from tests.integration.support import local_keycloak
from tests.integration.support.keycloak_api import KeycloakApi
from tests.integration.support.kubectl import Kubectl, events, wait_for
from tests.integration.support.operator_process import OperatorProcess
from tests.integration.test_client_settings import token_claims
from tests.integration.test_replication import (
    CLIENT_RES,
    REALM_RES,
    SCOPE_RES,
    admin_secret,
    client,
    phase,
    realm,
    replication_settled,
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
    time.sleep(16)  # a window of three resyncs at 5 s, measured, not waited on
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
    assert f"{names.CLIENT_SCOPE_KIND}/{foo}/shared" in conflict

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
