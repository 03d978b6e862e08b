"""Realms and clients replicated into the real Keycloak server (a local process from the Maven Central
distribution), declared on the real control plane, by the operator running as a real process.

Every realm here targets the server by URL with an admin Secret (spec.server.external); what the operator
did is checked inside Keycloak through its admin API, and admin writes are counted from Keycloak's own HTTP
metrics.
"""

from __future__ import annotations

import base64
import json
import re
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from keycloak_operator.kernel import names
from keycloak_operator.models.peering_crd import peering_object
from localcluster import promql
from localcluster.helm import CHART
from localcluster.keycloak import KeycloakProcess
from localcluster.keycloak_api import KeycloakApi
from localcluster.operator_process import OperatorProcess
from tests.integration.support import local_keycloak, old_operator
from tests.integration.support.flows import direct_grant, flow, flow_by_alias
from tests.integration.support.kubectl import Kubectl, events, wait_for
from tests.integration.support.session_operators import session_operators_stopped

pytestmark = pytest.mark.integration

REALM_RES = f"{names.REALM_PLURAL}.{names.GROUP}"
CLIENT_RES = f"{names.CLIENT_PLURAL}.{names.GROUP}"
SCOPE_RES = f"{names.CLIENT_SCOPE_PLURAL}.{names.GROUP}"
GROUP_RES = f"{names.GROUP_PLURAL}.{names.GROUP}"
ADMIN_SECRET = "kc-admin"


@pytest.fixture(scope="module")
def keycloak(kubectl: Kubectl) -> Iterator[KeycloakProcess]:
    yield from local_keycloak.serving(kubectl)


@pytest.fixture(scope="module")
def api(keycloak: KeycloakProcess) -> KeycloakApi:
    return KeycloakApi(keycloak)


def admin_secret(kc: KeycloakProcess, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": ADMIN_SECRET, "namespace": namespace},
        "stringData": {"username": kc.admin_username, "password": kc.admin_password},
    }


def realm(kc: KeycloakProcess, namespace: str, name: str, **spec: Any) -> dict[str, Any]:
    server = {"external": {"url": kc.url, "adminSecret": {"name": ADMIN_SECRET}}}
    return {
        "apiVersion": names.API_VERSION,
        "kind": names.REALM_KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"server": server, **spec},
    }


def client(
    namespace: str, name: str, realm_ref: dict[str, str], client_id: str, **spec: Any
) -> dict[str, Any]:
    return {
        "apiVersion": names.API_VERSION,
        "kind": names.CLIENT_KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"realm": realm_ref, "clientId": client_id, **spec},
    }


def phase(kubectl: Kubectl, res: str, namespace: str, name: str) -> str:
    obj = kubectl.get(res, name, namespace) or {}
    return str((obj.get("status") or {}).get("phase", ""))


def wait_phase(kubectl: Kubectl, res: str, namespace: str, name: str, want: str, timeout: float = 60) -> None:
    wait_for(
        f"{res} {namespace}/{name} {want}", lambda: phase(kubectl, res, namespace, name) == want, timeout
    )


@pytest.fixture
def setup(kubectl: Kubectl, operator: OperatorProcess, keycloak: KeycloakProcess, namespace: str) -> str:
    kubectl.apply(admin_secret(keycloak, namespace))
    return namespace


def realm_name(namespace: str) -> str:
    return f"r-{namespace}"


_REQUESTS = re.compile(r"^http_server_requests_seconds_count\{(?P<labels>.*)\}\s+(?P<value>\S+)$", re.M)


def rounds_seen(kc: KeycloakProcess) -> int:
    """Replication rounds of this server so far that got as far as reading it, from Keycloak's own HTTP
    metrics: a round lists the server's realms (GET /admin/realms) once, after logging in, and these tests
    never list them themselves. The operator runs one round per server at a time, so the round that made
    the n-th of these requests had finished before the (n+1)-th was made."""
    return _requests(kc, "GET", "/admin/realms")


def _requests(kc: KeycloakProcess, method: str, uri: str) -> int:
    """Requests of `method` to the route `uri` (Keycloak's template) so far, from Keycloak's own metrics."""
    with urllib.request.urlopen(f"{kc.management_url}/metrics", timeout=30) as r:
        text = r.read().decode()
    total = 0.0
    for m in _REQUESTS.finditer(text):
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m["labels"]))
        if labels.get("method") == method and labels.get("uri") == uri:
            total += float(m["value"])
    return int(total)


def replication_settled(kubectl: Kubectl, kc: KeycloakProcess, ns: str) -> Callable[[], bool]:
    """A probe for wait_for: true once every round of this server that began before the realm, clients,
    client scopes, groups, identity providers, flows and client Secrets of `ns` were last seen to change has
    finished, and left them as they were; and no realm of another namespace (an earlier test's, being deleted)
    is left on the server to be written for.

    The round count is read before and after the objects, to pin the order. Once two more rounds are counted
    than right after the read that last saw the objects change, every round begun before that read has
    finished: rounds of one server run one at a time, so such a round is the first of the two or came before
    it, and the second began after it ended. Objects read after that count and found unchanged were written
    by none of them; a round still running then began on the settled objects."""
    last: dict[str, Any] = {}

    def probe() -> bool:
        rounds_before = rounds_seen(kc)
        others = sorted(
            f"{r['metadata']['namespace']}/{r['metadata']['name']}"
            for r in kubectl.list(REALM_RES, None)
            if r["metadata"]["namespace"] != ns
            and ((r["spec"].get("server") or {}).get("external") or {}).get("url") == kc.url
        )
        objects = sorted(
            (o["kind"], o["metadata"]["name"], o["metadata"]["resourceVersion"])
            for o in [
                *kubectl.list(REALM_RES, ns),
                *kubectl.list(CLIENT_RES, ns),
                *kubectl.list(SCOPE_RES, ns),
                *kubectl.list(GROUP_RES, ns),
                *kubectl.list(f"{names.IDENTITY_PROVIDER_PLURAL}.{names.GROUP}", ns),
                *kubectl.list(f"{names.AUTHENTICATION_FLOW_PLURAL}.{names.GROUP}", ns),
                *kubectl.list("secret", ns, f"{names.LABEL_COMPONENT}=client-secret"),
            ]
        )
        rounds_after = rounds_seen(kc)
        if others or objects != last.get("objects"):
            last.update(objects=objects, rounds=rounds_after)
            return False
        return rounds_before >= last["rounds"] + 2

    return probe


def test_realm_and_confidential_client_are_created_updated_and_deleted(
    kubectl: Kubectl, keycloak: KeycloakProcess, api: KeycloakApi, setup: str
) -> None:
    ns, rn = setup, realm_name(setup)
    kubectl.apply(
        realm(
            keycloak,
            ns,
            "main",
            realmName=rn,
            displayName="Team realm",
            roles=[{"name": "reader", "description": "reads"}],
            tokens={"accessTokenLifespanSeconds": 120},
        )
    )
    kubectl.apply(client(ns, "web", {"name": "main"}, "web-app", redirectUris=["https://web.example/*"]))
    wait_phase(kubectl, REALM_RES, ns, "main", "Ready")
    wait_phase(kubectl, CLIENT_RES, ns, "web", "Ready")

    r = api.realm(rn)
    assert r is not None and r["displayName"] == "Team realm" and r["accessTokenLifespan"] == 120
    assert r["attributes"]["kcop.dev.namespace"] == ns and r["attributes"]["kcop.dev.name"] == "main"
    roles = api.call("GET", f"/{rn}/roles?briefRepresentation=false")
    assert {x["name"]: x.get("description") for x in roles}.get("reader") == "reads"
    c = api.client(rn, "web-app")
    assert c is not None and c["redirectUris"] == ["https://web.example/*"] and not c["publicClient"]
    assert c["attributes"]["kcop.dev.kind"] == names.CLIENT_KIND
    status = kubectl.get(CLIENT_RES, "web", ns)["status"]
    assert status["keycloakId"] == c["id"]

    # The confidential client's secret, in a Secret owned by the client resource.
    secret = wait_for("client secret", lambda: kubectl.get("secret", names.client_secret("web"), ns))
    value = base64.b64decode(secret["data"]["clientSecret"]).decode()
    assert value == api.client_secret(rn, c["id"])
    assert (
        secret["metadata"]["ownerReferences"][0]["uid"]
        == kubectl.get(CLIENT_RES, "web", ns)["metadata"]["uid"]
    )

    # Update: same Keycloak object, new content.
    kubectl.apply(
        client(
            ns, "web", {"name": "main"}, "web-app", redirectUris=["https://web.example/*", "https://new/*"]
        )
    )
    wait_for(
        "redirect URIs updated",
        lambda: (
            sorted((api.client(rn, "web-app") or {}).get("redirectUris", []))
            == ["https://new/*", "https://web.example/*"]
        ),
    )
    assert api.client(rn, "web-app")["id"] == c["id"]

    # A realm update keeps the attributes set by hand: Keycloak's realm PUT with `attributes` removes every
    # one not sent, so the operator sends them back (a lost Frontend URL would change the tokens' issuer).
    listed = api.realm(rn) or {}
    api.call("PUT", f"/{rn}", {"attributes": {**listed["attributes"], "frontendUrl": "https://sso.example"}})
    kubectl.apply(realm(keycloak, ns, "main", realmName=rn, displayName="Team realm, renamed"))
    wait_for(
        "the display name updated",
        lambda: (api.realm(rn) or {}).get("displayName") == "Team realm, renamed",
    )
    updated = (api.realm(rn) or {}).get("attributes") or {}
    assert updated.get("frontendUrl") == "https://sso.example", updated
    assert updated["kcop.dev.namespace"] == ns

    # Delete: the finalizer holds the resource until the client is gone from Keycloak.
    kubectl.run("delete", CLIENT_RES, "web", "-n", ns, "--wait=false")
    wait_for("client deleted in Keycloak", lambda: api.client(rn, "web-app") is None)
    wait_for("client resource gone", lambda: kubectl.get(CLIENT_RES, "web", ns) is None)
    assert events(kubectl, ns, reason="Created")


def test_every_metric_the_dashboard_and_the_alerts_query_is_served(
    kubectl: Kubectl, operator: OperatorProcess, keycloak: KeycloakProcess, setup: str
) -> None:
    """The chart's Grafana dashboard and alert rules ask for series the operator's and Keycloak's live
    /metrics serve (after one realm replicated: admin traffic on Keycloak, a round in the operator)."""
    ns = setup
    kubectl.apply(realm(keycloak, ns, "metered", realmName=f"m-{ns}"))
    wait_phase(kubectl, REALM_RES, ns, "metered", "Ready")
    dashboard = json.loads((CHART / "files" / "dashboard.json").read_text())
    rules = yaml.safe_load((CHART / "files" / "prometheus-rules.yaml").read_text())
    queried: set[str] = set()
    for expr in promql.dashboard_expressions(dashboard) + promql.rule_expressions(rules):
        queried |= promql.metric_names(expr)
    pages = {}
    for url in (operator.metrics_url, f"{keycloak.management_url}/metrics"):
        with urllib.request.urlopen(url, timeout=30) as r:
            pages[url] = r.read().decode()
    served = set().union(*(promql.exposed_names(page) for page in pages.values()))
    assert {"kcop_leading", "http_server_requests_seconds_count"} <= queried  # both sides are asked for
    assert queried - served == set(), sorted(served)
    # The realm just replicated is counted Ready by the leader (the session's operator runs alone).
    ready = re.search(
        r'^kcop_replicated_resources\{kind="KeycloakRealm",phase="Ready"\} (\S+)$',
        pages[operator.metrics_url],
        re.M,
    )
    assert ready is not None and float(ready[1]) >= 1


def test_hand_edits_in_keycloak_are_repaired_and_reported(
    kubectl: Kubectl, keycloak: KeycloakProcess, api: KeycloakApi, setup: str
) -> None:
    ns, rn = setup, realm_name(setup)
    kubectl.apply(realm(keycloak, ns, "main", realmName=rn))
    kubectl.apply(client(ns, "app", {"name": "main"}, "app", publicClient=True, redirectUris=["https://a/*"]))
    wait_phase(kubectl, CLIENT_RES, ns, "app", "Ready")
    c = api.client(rn, "app")
    api.call(
        "PUT",
        f"/{rn}/clients/{c['id']}",
        {**c, "redirectUris": ["https://evil/*"], "directAccessGrantsEnabled": True},
    )
    api.call("PUT", f"/{rn}", {"displayName": "edited by hand"})
    wait_for(
        "client repaired", lambda: (api.client(rn, "app") or {}).get("redirectUris") == ["https://a/*"], 60
    )
    wait_for("realm repaired", lambda: (api.realm(rn) or {}).get("displayName") in (None, ""), 60)
    assert api.client(rn, "app")["directAccessGrantsEnabled"] is False
    assert api.client(rn, "app")["id"] == c["id"]
    repaired = wait_for("drift events", lambda: events(kubectl, ns, reason="DriftRepaired"))
    assert any("redirectUris" in e["message"] for e in repaired), repaired


def test_preserve_annotation_leaves_the_object_unmanaged(
    kubectl: Kubectl, keycloak: KeycloakProcess, api: KeycloakApi, setup: str
) -> None:
    ns, rn = setup, realm_name(setup)
    kubectl.apply(realm(keycloak, ns, "main", realmName=rn))
    kept = client(ns, "kept", {"name": "main"}, "kept", publicClient=True)
    kept["metadata"]["annotations"] = {names.ANNOTATION_PRESERVE: "true"}
    kubectl.apply(kept)
    wait_phase(kubectl, CLIENT_RES, ns, "kept", "Ready")
    uuid = api.client(rn, "kept")["id"]
    kubectl.run("delete", CLIENT_RES, "kept", "-n", ns, "--wait=false")
    wait_for("resource gone", lambda: kubectl.get(CLIENT_RES, "kept", ns) is None)
    left = api.client(rn, "kept")
    assert left is not None and left["id"] == uuid
    assert not (left.get("attributes") or {}).get("kcop.dev.kind"), "the object must no longer be marked"
    start = rounds_seen(keycloak)  # rounds later it is still there: not ours any more, never deleted
    wait_for("two more rounds", lambda: rounds_seen(keycloak) >= start + 2, 60)
    assert api.client(rn, "kept") is not None


def test_same_client_id_from_two_namespaces_first_keeps_it_second_conflicts(
    kubectl: Kubectl, keycloak: KeycloakProcess, api: KeycloakApi, setup: str, namespace_factory
) -> None:
    ns, rn = setup, realm_name(setup)
    other = namespace_factory()
    kubectl.apply(realm(keycloak, ns, "main", realmName=rn, clientNamespaces=[other]))
    kubectl.apply(
        client(ns, "api", {"name": "main"}, "shared", publicClient=True, redirectUris=["https://one/*"])
    )
    wait_phase(kubectl, CLIENT_RES, ns, "api", "Ready")
    first = api.client(rn, "shared")
    kubectl.apply(
        client(
            other,
            "api",
            {"name": "main", "namespace": ns},
            "shared",
            publicClient=True,
            redirectUris=["https://two/*"],
        )
    )
    wait_phase(kubectl, CLIENT_RES, other, "api", "Conflict")
    cond = kubectl.get(CLIENT_RES, "api", other)["status"]["conditions"][0]
    # The holder is named by kind only: one namespace's status never names another's objects.
    assert "a KeycloakClient of another namespace" in cond["message"] and ns not in cond["message"]
    assert "nothing was written" in cond["message"]
    start = rounds_seen(keycloak)  # rounds after the conflict, the first namespace's client is unchanged
    wait_for("two more rounds", lambda: rounds_seen(keycloak) >= start + 2, 60)
    now = api.client(rn, "shared")
    assert now["id"] == first["id"] and now["redirectUris"] == ["https://one/*"]
    assert now["attributes"]["kcop.dev.namespace"] == ns

    # A clientId held by an object the operator did not create is never taken over either.
    api.call("POST", f"/{rn}/clients", {"clientId": "handmade", "publicClient": True})
    kubectl.apply(
        client(ns, "hm", {"name": "main"}, "handmade", publicClient=True, redirectUris=["https://x/*"])
    )
    wait_phase(kubectl, CLIENT_RES, ns, "hm", "Conflict")
    assert api.client(rn, "handmade")["redirectUris"] == []


def adopting(obj: dict[str, Any]) -> dict[str, Any]:
    obj["metadata"]["annotations"] = {names.ANNOTATION_ADOPT: "true"}
    return obj


def test_objects_made_by_hand_are_adopted_only_when_asked_and_only_by_the_realms_namespace(
    kubectl: Kubectl, keycloak: KeycloakProcess, api: KeycloakApi, setup: str, namespace_factory
) -> None:
    ns, rn = setup, realm_name(setup)
    other = namespace_factory()
    kubectl.apply(admin_secret(keycloak, other))
    # A realm and a confidential client made by hand, before the operator: an import, another tool.
    api.call("POST", "", {"realm": rn, "enabled": True, "displayName": "by hand"})
    api.call("POST", f"/{rn}/clients", {"clientId": "legacy", "redirectUris": ["https://old/*"]})
    legacy = api.client(rn, "legacy")
    assert legacy is not None
    handmade_secret = api.client_secret(rn, legacy["id"])

    declared = realm(keycloak, ns, "main", realmName=rn, displayName="Team realm", clientNamespaces=[other])
    kubectl.apply(declared)
    wait_phase(kubectl, REALM_RES, ns, "main", "Conflict")
    assert (api.realm(rn) or {}).get("displayName") == "by hand"

    kubectl.apply(adopting(declared))
    wait_phase(kubectl, REALM_RES, ns, "main", "Ready")
    taken = api.realm(rn) or {}
    assert taken.get("displayName") == "Team realm" and taken["attributes"]["kcop.dev.namespace"] == ns
    assert events(kubectl, ns, name="main", reason="Adopted")

    # Another namespace the realm allows clients from may not take the realm's hand-made client.
    wanted = {"redirectUris": ["https://new/*"]}
    kubectl.apply(adopting(client(other, "legacy", {"name": "main", "namespace": ns}, "legacy", **wanted)))
    wait_phase(kubectl, CLIENT_RES, other, "legacy", "Conflict")
    message = kubectl.get(CLIENT_RES, "legacy", other)["status"]["conditions"][0]["message"]
    assert f"not adopted: only resources in namespace {ns}" in message
    kubectl.run("delete", CLIENT_RES, "legacy", "-n", other, "--wait=false")

    # The realm's own namespace may: same Keycloak object, now as declared, its secret in a Secret.
    kubectl.apply(adopting(client(ns, "legacy", {"name": "main"}, "legacy", **wanted)))
    wait_phase(kubectl, CLIENT_RES, ns, "legacy", "Ready")
    now = api.client(rn, "legacy") or {}
    assert now["id"] == legacy["id"] and now["redirectUris"] == ["https://new/*"]
    assert now["attributes"]["kcop.dev.namespace"] == ns
    assert events(kubectl, ns, name="legacy", reason="Adopted")
    secret = wait_for("client secret", lambda: kubectl.get("secret", names.client_secret("legacy"), ns))
    assert base64.b64decode(secret["data"]["clientSecret"]).decode() == handmade_secret

    # Adopted is owned: deleting the resource deletes the object.
    kubectl.run("delete", CLIENT_RES, "legacy", "-n", ns, "--wait=false")
    wait_for("adopted client deleted with its resource", lambda: api.client(rn, "legacy") is None)


def of_kind(kind: str, namespace: str, resource_name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": names.API_VERSION,
        "kind": kind,
        "metadata": {"name": resource_name, "namespace": namespace},
        "spec": spec,
    }


def claims(kc: KeycloakProcess, rn: str, form: dict[str, str]) -> dict[str, Any]:
    data = urllib.parse.urlencode(form).encode()
    url = f"{kc.url}/realms/{rn}/protocol/openid-connect/token"
    with urllib.request.urlopen(url, data, timeout=30) as r:
        payload = json.load(r)["access_token"].split(".")[1]
    return dict(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))))


# Each kind's resource, for kubectl; the realm last, as a deletion in dependency order would have it.
RESOURCE_OF = {
    kind: f"{plural}.{names.GROUP}"
    for kind, plural in (
        (names.CLIENT_KIND, names.CLIENT_PLURAL),
        (names.CLIENT_SCOPE_KIND, names.CLIENT_SCOPE_PLURAL),
        (names.GROUP_KIND, names.GROUP_PLURAL),
        (names.IDENTITY_PROVIDER_KIND, names.IDENTITY_PROVIDER_PLURAL),
        (names.REALM_KIND, names.REALM_PLURAL),
        (names.AUTHENTICATION_FLOW_KIND, names.AUTHENTICATION_FLOW_PLURAL),
    )
}


def test_a_realm_of_every_kind_reaches_ready_its_tokens_carry_what_they_declare_and_all_goes_at_once(
    kubectl: Kubectl, keycloak: KeycloakProcess, api: KeycloakApi, setup: str
) -> None:
    """Issue 16's realm built from every kind at once: a confidential client with roles, a mapper and a
    service account; a client scope with a mapper; a group tree with role mappings; an OIDC identity
    provider; an authentication flow bound as the realm's direct grant. Everything reaches Ready, a
    service-account token and a group member's token (a password grant through the bound flow) carry what was
    declared; the flow's deletion first returns the binding to Keycloak's built-in; and deleting every
    resource at once leaves Keycloak clean with no resource stuck."""
    ns, rn = setup, realm_name(setup)
    ref = {"name": "main"}
    claim = {"jsonType.label": "String", "access.token.claim": "true"}
    kubectl.apply(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "corp", "namespace": ns},
            "stringData": {"client-secret": "upstream-secret"},
        }
    )
    objects = [
        realm(
            keycloak,
            ns,
            "main",
            realmName=rn,
            roles=[{"name": "reader"}],
            flowBindings={"directGrant": "direct"},
        ),
        flow(ns, "direct", ref, "team direct", executions=direct_grant("team direct otp")),
        of_kind(
            names.CLIENT_SCOPE_KIND,
            ns,
            "team",
            realm=ref,
            name="team",
            protocolMappers=[
                {
                    "name": "team",
                    "protocolMapper": "oidc-hardcoded-claim-mapper",
                    "config": {"claim.name": "team", "claim.value": "web", **claim},
                }
            ],
        ),
        client(
            ns,
            "api",
            ref,
            "api",
            directAccessGrantsEnabled=True,
            serviceAccountsEnabled=True,
            roles=[{"name": "admin"}],
            protocolMappers=[
                {
                    "name": "tier",
                    "protocolMapper": "oidc-hardcoded-claim-mapper",
                    "config": {"claim.name": "tier", "claim.value": "gold", **claim},
                }
            ],
            defaultClientScopes=["basic", "roles", "team"],
            serviceAccountRoles={"realm": ["reader"], "clients": {"api": ["admin"]}},
        ),
        of_kind(names.GROUP_KIND, ns, "staff", realm=ref, name="staff", realmRoles=["reader"]),
        of_kind(
            names.GROUP_KIND,
            ns,
            "admins",
            realm=ref,
            name="admins",
            parent="staff",
            clientRoles={"api": ["admin"]},
        ),
        of_kind(
            names.IDENTITY_PROVIDER_KIND,
            ns,
            "corp",
            realm=ref,
            alias="corp",
            providerId="oidc",
            oidc={
                "authorizationUrl": "https://sso.corp.example.com/auth",
                "tokenUrl": "https://sso.corp.example.com/token",
                "clientId": "shop",
                "clientSecret": {"name": "corp", "key": "client-secret"},
            },
            mappers=[
                {
                    "name": "email",
                    "identityProviderMapper": "oidc-user-attribute-idp-mapper",
                    "config": {"claim": "email", "user.attribute": "email", "syncMode": "INHERIT"},
                }
            ],
        ),
    ]
    for obj in objects:
        kubectl.apply(obj)
    for obj in objects:
        wait_phase(kubectl, RESOURCE_OF[obj["kind"]], ns, obj["metadata"]["name"], "Ready", timeout=120)

    secret = wait_for("client secret", lambda: kubectl.get("secret", names.client_secret("api"), ns))
    client_secret = base64.b64decode(secret["data"]["clientSecret"]).decode()
    service = claims(
        keycloak, rn, {"grant_type": "client_credentials", "client_id": "api", "client_secret": client_secret}
    )
    assert (service["tier"], service["team"]) == ("gold", "web"), service
    assert "reader" in service["realm_access"]["roles"], service
    assert service["resource_access"]["api"]["roles"] == ["admin"], service

    # A member of the subgroup gets the parent's realm role and its own client role.
    api.call(
        "POST",
        f"/{rn}/users",
        {
            "username": "ann",
            "enabled": True,
            "firstName": "Ann",
            "lastName": "Lee",
            "email": "ann@example.com",
            "emailVerified": True,
            "credentials": [{"type": "password", "value": "ann-pass-1", "temporary": False}],
        },
    )
    user = api.call("GET", f"/{rn}/users?username=ann&exact=true")[0]
    admins = api.call("GET", f"/{rn}/group-by-path/staff/admins")
    api.call("PUT", f"/{rn}/users/{user['id']}/groups/{admins['id']}")
    # The password grant runs through the bound flow (its id is the one derived for the resource).
    bound = flow_by_alias(api, rn, "team direct")
    assert bound is not None and (api.realm(rn) or {})["directGrantFlow"] == "team direct"
    assert (
        kubectl.get(RESOURCE_OF[names.AUTHENTICATION_FLOW_KIND], "direct", ns)["status"]["keycloakId"]
        == bound["id"]
    )
    password = {
        "grant_type": "password",
        "client_id": "api",
        "client_secret": client_secret,
        "username": "ann",
        "password": "ann-pass-1",
    }
    member = claims(keycloak, rn, password)
    assert "reader" in member["realm_access"]["roles"], member
    assert member["resource_access"]["api"]["roles"] == ["admin"], member
    assert api.call("GET", f"/{rn}/identity-provider/instances/corp") is not None

    # A quiet resync of the whole realm: 0 Keycloak writes and 0 Kubernetes writes (no resource, status,
    # Secret or Event changes) over three rounds.
    wait_for("the rounds to settle", replication_settled(kubectl, keycloak, ns), timeout=90)

    def kube_versions() -> set[tuple[str, str, str]]:
        found = set()
        for kind in [*RESOURCE_OF.values(), "secret", "events"]:
            for obj in kubectl.list(kind, ns):
                meta = obj["metadata"]
                found.add((kind, meta["name"], meta["resourceVersion"]))
        return found

    before, versions, rounds = api.admin_writes(), kube_versions(), rounds_seen(keycloak)
    wait_for("three more rounds", lambda: rounds_seen(keycloak) >= rounds + 3, 60)
    assert api.admin_writes() - before == 0
    assert kube_versions() == versions

    # The flow's resource deleted alone: the binding returns to the built-in first, then the flow goes
    # (Keycloak refuses to delete a bound flow); sign-ins go on through the built-in. Declared again, it is
    # bound again.
    flows = RESOURCE_OF[names.AUTHENTICATION_FLOW_KIND]
    kubectl.run("delete", flows, "direct", "-n", ns, "--wait=false")
    wait_for("the flow resource gone", lambda: kubectl.get(flows, "direct", ns) is None, timeout=60)
    assert (api.realm(rn) or {})["directGrantFlow"] == "direct grant"
    assert flow_by_alias(api, rn, "team direct") is None and flow_by_alias(api, rn, "team direct otp") is None
    assert "reader" in claims(keycloak, rn, password)["realm_access"]["roles"]
    wait_phase(kubectl, REALM_RES, ns, "main", "Pending", timeout=60)  # its binding names no flow now
    kubectl.apply(flow(ns, "direct", ref, "team direct", executions=direct_grant("team direct otp")))
    wait_phase(kubectl, REALM_RES, ns, "main", "Ready", timeout=60)
    assert (api.realm(rn) or {})["directGrantFlow"] == "team direct"

    # Every resource deleted at once, in no order: nothing stuck, nothing left in Keycloak.
    # (The realm's deletion waits for its declared clients, the parent group for its subgroup: the operator
    # orders what kubectl does not.)
    kinds = list(RESOURCE_OF.values())
    kubectl.run("delete", ",".join(kinds), "--all", "-n", ns, "--wait=false")
    wait_for("every resource gone", lambda: not any(kubectl.list(k, ns) for k in kinds), timeout=120)
    assert api.realm(rn) is None


def test_namespaces_not_allowed_are_forbidden_and_nothing_is_written(
    kubectl: Kubectl, keycloak: KeycloakProcess, api: KeycloakApi, setup: str, namespace_factory
) -> None:
    ns, rn = setup, realm_name(setup)
    outsider = namespace_factory()
    kubectl.apply(realm(keycloak, ns, "main", realmName=rn))
    kubectl.apply(client(outsider, "sneaky", {"name": "main", "namespace": ns}, "sneaky", publicClient=True))
    wait_phase(kubectl, CLIENT_RES, outsider, "sneaky", "Forbidden")
    assert api.client(rn, "sneaky") is None

    # A realm on a Keycloak of this operator, from a namespace the Keycloak does not list.
    kubectl.apply(
        {
            "apiVersion": names.API_VERSION,
            "kind": names.REALM_KIND,
            "metadata": {"name": "onkc", "namespace": outsider},
            "spec": {"server": {"keycloak": {"name": "kc", "namespace": ns}}, "realmName": f"x-{rn}"},
        }
    )
    kubectl.apply(
        {
            "apiVersion": names.API_VERSION,
            "kind": names.KEYCLOAK_KIND,
            "metadata": {"name": "kc", "namespace": ns},
            "spec": {
                "image": "quay.io/keycloak/keycloak:26.0.0",
                "replicas": 1,
                "database": {"external": {"host": "db", "credentialsSecret": {"name": "db"}}},
            },
        }
    )
    wait_phase(kubectl, REALM_RES, outsider, "onkc", "Forbidden")
    assert "realmNamespaces" in kubectl.get(REALM_RES, "onkc", outsider)["status"]["conditions"][0]["message"]


def test_seed_003_same_name_in_two_namespaces_deleting_one_never_touches_the_other(
    kubectl: Kubectl, keycloak: KeycloakProcess, api: KeycloakApi, setup: str, namespace_factory
) -> None:
    home, rn = setup, realm_name(setup)
    bar, foo = namespace_factory("bar"), namespace_factory("foo")
    kubectl.apply(realm(keycloak, home, "main", realmName=rn, clientNamespaces=[bar, foo]))
    ref = {"name": "main", "namespace": home}
    kubectl.apply(client(bar, "web", ref, "web-bar", publicClient=True))
    kubectl.apply(client(foo, "web", ref, "web-foo", publicClient=True))
    wait_phase(kubectl, CLIENT_RES, bar, "web", "Ready")
    wait_phase(kubectl, CLIENT_RES, foo, "web", "Ready")
    foo_id = api.client(rn, "web-foo")["id"]
    api.call("PUT", f"/{rn}", {"adminEventsEnabled": True, "adminEventsDetailsEnabled": True})

    kubectl.run("delete", CLIENT_RES, "web", "-n", bar, "--wait=false")
    wait_for("bar's client deleted", lambda: api.client(rn, "web-bar") is None)
    start = rounds_seen(keycloak)  # Consul's bug deleted and restored the survivor on every round
    wait_for("two more rounds", lambda: rounds_seen(keycloak) >= start + 2, 60)
    survivor = api.client(rn, "web-foo")
    assert survivor is not None and survivor["id"] == foo_id
    touched = [e for e in api.admin_events(rn) if foo_id in e.get("resourcePath", "")]
    assert touched == [], f"foo's client was written: {touched}"


def test_deleting_a_realm_with_clients_declared_is_refused_until_they_go(
    kubectl: Kubectl, keycloak: KeycloakProcess, api: KeycloakApi, setup: str
) -> None:
    ns, rn = setup, realm_name(setup)
    kubectl.apply(realm(keycloak, ns, "main", realmName=rn))
    kubectl.apply(client(ns, "c1", {"name": "main"}, "c1", publicClient=True))
    wait_phase(kubectl, CLIENT_RES, ns, "c1", "Ready")
    kubectl.run("delete", REALM_RES, "main", "-n", ns, "--wait=false")
    wait_phase(kubectl, REALM_RES, ns, "main", "Deleting")
    cond = kubectl.get(REALM_RES, "main", ns)["status"]["conditions"][0]
    assert cond["reason"] == "DeletionBlocked" and f"{ns}/c1" in cond["message"]
    assert api.realm(rn) is not None and api.client(rn, "c1") is not None
    kubectl.run("delete", CLIENT_RES, "c1", "-n", ns, "--wait=false")
    wait_for("realm deleted in Keycloak", lambda: api.realm(rn) is None)
    wait_for("realm resource gone", lambda: kubectl.get(REALM_RES, "main", ns) is None)


def test_deleting_the_namespace_deletes_its_realm_even_though_the_admin_secret_goes_too(
    kubectl: Kubectl, keycloak: KeycloakProcess, api: KeycloakApi, setup: str
) -> None:
    # Namespace deletion removes the admin Secret and the realm resource at once; the operator finishes the
    # realm's deletion in Keycloak with the credentials that last logged in, so the namespace can go.
    ns, rn = setup, realm_name(setup)
    kubectl.apply(realm(keycloak, ns, "main", realmName=rn))
    kubectl.apply(client(ns, "web", {"name": "main"}, "web-app", publicClient=True))
    wait_phase(kubectl, CLIENT_RES, ns, "web", "Ready")
    assert api.client(rn, "web-app") is not None

    kubectl.run("delete", "namespace", ns, "--wait=false")
    wait_for("realm deleted from Keycloak", lambda: api.realm(rn) is None, timeout=90)
    wait_for("namespace gone", lambda: kubectl.get("namespace", ns) is None, timeout=90)


def test_quiet_resync_makes_zero_admin_writes_and_leaks_no_credentials(
    kubectl: Kubectl, keycloak: KeycloakProcess, api: KeycloakApi, setup: str, operator: OperatorProcess
) -> None:
    ns, rn = setup, realm_name(setup)
    start = api.admin_writes()
    kubectl.apply(realm(keycloak, ns, "main", realmName=rn, roles=[{"name": "r1"}]))
    for i in range(5):
        kubectl.apply(client(ns, f"c{i}", {"name": "main"}, f"c{i}", redirectUris=[f"https://{i}/*"]))
    for i in range(5):
        wait_phase(kubectl, CLIENT_RES, ns, f"c{i}", "Ready")
    wait_for(
        "secrets", lambda: len(kubectl.list("secret", ns, f"{names.LABEL_COMPONENT}=client-secret")) == 5
    )
    # The status writes trigger rounds of their own: the baseline must not be taken while a round that began
    # before the objects settled may still write.
    wait_for(
        "the replication rounds begun before the objects settled to finish",
        replication_settled(kubectl, keycloak, ns),
        timeout=90,
    )
    before = api.admin_writes()
    assert before - start >= 6, "the counter must see the realm and client creates, or zero proves nothing"
    start = rounds_seen(keycloak)
    wait_for("three more rounds", lambda: rounds_seen(keycloak) >= start + 3, 60)
    assert api.admin_writes() - before == 0
    resource_versions = {c["metadata"]["resourceVersion"] for c in kubectl.list(CLIENT_RES, ns)}
    start = rounds_seen(keycloak)
    wait_for("two more rounds", lambda: rounds_seen(keycloak) >= start + 2, 60)
    assert {c["metadata"]["resourceVersion"] for c in kubectl.list(CLIENT_RES, ns)} == resource_versions

    password = keycloak.admin_password
    assert password not in operator.log_path.read_text()
    for e in kubectl.list("events", ns):
        assert password not in e.get("message", "")
    for kind in (REALM_RES, CLIENT_RES):
        for obj in kubectl.list(kind, ns):
            assert password not in str(obj.get("status"))


# --- two operator versions side by side (ADR 0022) ----------------------------------------------------------

PEERING_LIFETIME = "10"  # seconds a silent replica still counts as alive
FORMAT_RECORD = "kcop.dev.format"


def _realm_puts(kc: KeycloakProcess) -> int:
    """PUT /admin/realms/{realm} requests so far, from Keycloak's own metrics (the realm writes; a migration
    writes its record that way)."""
    return _requests(kc, "PUT", "/admin/realms/{realm}")


def _record(api: KeycloakApi, rn: str) -> str | None:
    return ((api.realm(rn) or {}).get("attributes") or {}).get(FORMAT_RECORD)


def _groups(api: KeycloakApi, rn: str) -> list[dict[str, Any]]:
    found = api.call("GET", f"/{rn}/groups?briefRepresentation=false") or []
    return sorted(
        ({"id": g["id"], "name": g["name"], "attributes": g.get("attributes")} for g in found), key=str
    )


def _wait_rounds(kc: KeycloakProcess, what: str, rounds: int, timeout: float = 120) -> None:
    """Until `rounds` more replication rounds of this server have finished (counted, not slept)."""
    start = rounds_seen(kc)
    wait_for(what, lambda: rounds_seen(kc) >= start + rounds + 1, timeout=timeout)


def _active(proc: OperatorProcess) -> bool:
    return "this replica is active" in proc.log_text()


def _active_again(proc: OperatorProcess) -> bool:
    """Active since it last stood by: a line from before (it led until its peer came) says nothing."""
    text = proc.log_text()
    standing_by = text.rfind("this replica is standing by")
    return standing_by >= 0 and "this replica is active" in text[standing_by:]


def test_an_old_replica_beside_a_new_one_leaves_unknown_kinds_alone_and_the_format_migrates_once_it_is_gone(
    cluster,  # type: ignore[no-untyped-def]
    kubectl: Kubectl,
    keycloak: KeycloakProcess,
    api: KeycloakApi,
    namespace: str,
    operator: OperatorProcess,  # stopped meanwhile; back afterwards to delete the namespace's realm
    tmp_path: Path,
) -> None:
    """A rolling update: the previous version (real code from this repository's history, from before
    KeycloakGroup existed) and this one, in one kopf peering. The old one leading for rounds of its own never
    touches the groups the new one wrote; the stored format stays the old one while the old replica lives,
    is migrated once after it stops, and never again (the record is read from every round's listing)."""
    # The session's operator stops for this test only once no other test's realm is left on this server: a
    # namespace deleted while no operator runs takes its admin Secret along, and its realm could then never
    # be deleted from Keycloak (its finalizer would hold it, and the module's cleanup, for ever).
    wait_for(
        "no other namespace's realm left on this server",
        lambda: (
            not [
                r
                for r in kubectl.list(REALM_RES, None)
                if r["metadata"]["namespace"] != namespace
                and ((r["spec"].get("server") or {}).get("external") or {}).get("url") == keycloak.url
            ]
        ),
        timeout=120,
    )
    with session_operators_stopped():
        _two_versions(cluster, kubectl, keycloak, api, namespace, tmp_path)


def _two_versions(
    cluster,  # type: ignore[no-untyped-def]
    kubectl: Kubectl,
    keycloak: KeycloakProcess,
    api: KeycloakApi,
    namespace: str,
    tmp_path: Path,
) -> None:
    ns, rn = namespace, realm_name(namespace)
    old_src = old_operator.extract(old_operator.commit_before_groups(), tmp_path / "old")
    old_operator.check(old_src)
    name = f"versions-{uuid.uuid4().hex[:6]}"
    kubectl.apply(peering_object(name))
    peering_args = ("--all-namespaces", "--peering", name)
    env = {"KCOP_PEERING_LIFETIME": PEERING_LIFETIME}
    (tmp_path / "old-logs").mkdir()
    (tmp_path / "new-logs").mkdir()
    # Rounds every 2 s on both (the old commit reads KCOP_RESYNC_SECONDS too): the test counts rounds.
    old = OperatorProcess(
        cluster.kubeconfig,
        tmp_path / "old-logs",
        resync_seconds=2,
        extra_env={**env, "PYTHONPATH": str(old_src)},
    )
    new = OperatorProcess(cluster.kubeconfig, tmp_path / "new-logs", resync_seconds=2, extra_env=env)
    try:
        old.start(*peering_args, "--priority", "100")
        # As in a rolling update, the old replica is in the peering before the new one starts: a new one that
        # read the peering before its old peer had written itself there would take itself for the only one.
        wait_for(
            "the old replica in the peering",
            lambda: bool((kubectl.get("clusterkopfpeerings.kopf.dev", name) or {}).get("status")),
            timeout=60,
        )
        new.start(*peering_args, "--priority", "200")
        wait_for("the new replica leading", lambda: _active(new), timeout=60)
        wait_for(
            "the old one standing by", lambda: "this replica is standing by" in old.log_text(), timeout=60
        )

        kubectl.apply(admin_secret(keycloak, ns))
        kubectl.apply(realm(keycloak, ns, "main", realmName=rn, displayName="Two versions"))
        ref = {"name": "main"}
        kubectl.apply(
            of_kind(names.GROUP_KIND, ns, "staff", realm=ref, name="staff", attributes={"team": ["a"]})
        )
        wait_phase(kubectl, GROUP_RES, ns, "staff", "Ready", timeout=90)
        wait_for("rounds begun before the objects settled", replication_settled(kubectl, keycloak, ns), 90)
        groups = _groups(api, rn)
        assert [g["name"] for g in groups] == ["staff"]

        # The old version leads: it lists the realm every round and knows nothing of groups.
        new.stop()
        wait_for("the old replica taking over", lambda: _active_again(old), timeout=60)
        _wait_rounds(keycloak, "rounds of the old replica", 2)
        assert old.alive(), old.tail()
        assert _groups(api, rn) == groups  # never deleted as an orphan, never rewritten
        assert _record(api, rn) is None

        # The new version again, beside the old one still alive: leading, but on the old format.
        new.start(*peering_args, "--priority", "200")
        wait_for("the new replica leading again", lambda: _active(new), timeout=60)
        wait_for("rounds begun before the objects settled", replication_settled(kubectl, keycloak, ns), 90)
        _wait_rounds(keycloak, "rounds of the new replica beside the live old one", 2)
        assert _record(api, rn) is None
        assert "stored format" not in new.log_text()

        # The old one gone (its peering entry removed as it stops): the migration runs, once.
        puts = _realm_puts(keycloak)
        old.stop()
        wait_for("the stored format recorded", lambda: _record(api, rn) == "2", timeout=60)
        _wait_rounds(keycloak, "rounds after the migration", 2)
        assert _realm_puts(keycloak) - puts == 1, "the migration is one write of its record"
        assert new.log_text().count("stored format 2 written") == 1
        assert _groups(api, rn) == groups

        # A realm update keeps the record and the attributes set by hand (Keycloak replaces a realm's
        # attributes with those a PUT sends: the update sends them back with the marker and the record).
        listed = api.realm(rn) or {}
        api.call(
            "PUT", f"/{rn}", {"attributes": {**listed["attributes"], "frontendUrl": "https://sso.example"}}
        )
        kubectl.apply(realm(keycloak, ns, "main", realmName=rn, displayName="Renamed"))
        wait_for(
            "the display name written", lambda: (api.realm(rn) or {}).get("displayName") == "Renamed", 60
        )
        _wait_rounds(keycloak, "rounds after the realm update", 2)
        assert _record(api, rn) == "2"
        assert ((api.realm(rn) or {}).get("attributes") or {}).get("frontendUrl") == "https://sso.example"
        # the hand edit, the display name's update, and no migration again
        assert _realm_puts(keycloak) - puts == 3
        assert new.log_text().count("stored format") == 1  # the one migration above, not again
    finally:
        new.stop()
        old.stop()
        kubectl.run("delete", "clusterkopfpeering", name, "--wait=false", check=False)
