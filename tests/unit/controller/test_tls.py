"""TLS on a Keycloak: what the pods serve, what the Service exposes, and how the operator logs in."""

from __future__ import annotations

from typing import Any

import httpx

from keycloak_operator.core import children, keycloak_config
from keycloak_operator.core.deployment import render_deployment
from keycloak_operator.core.replication.resources import realm_target
from keycloak_operator.kernel import names
from keycloak_operator.models.keycloak import KeycloakSpec
from keycloak_operator.shell.http_limits import CappedTransport
from tests.unit.builders import BASE, spec

OWNER = children.Owner(name="kc", namespace="ns", uid="uid-1")


def pod(s: KeycloakSpec) -> dict[str, Any]:
    dep = render_deployment(OWNER, s, image=s.image, track="a", version="v")
    return dict(dep["spec"]["template"]["spec"])


def env(s: KeycloakSpec) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in pod(s)["containers"][0]["env"]}


def test_without_tls_keycloak_serves_http_only() -> None:
    s = spec()
    container = pod(s)["containers"][0]
    assert env(s)["KC_HTTP_ENABLED"] == "true" and "KC_HTTPS_CERTIFICATE_FILE" not in env(s)
    assert container["readinessProbe"]["httpGet"]["scheme"] == "HTTP"
    assert "volumes" not in pod(s)
    ports = children.public_service(OWNER, "a", s)["spec"]["ports"]
    assert [(p["name"], p["port"]) for p in ports] == [("http", 8080)]


def test_tls_on_turns_http_off_mounts_the_secret_and_probes_over_https() -> None:
    s = spec(tls={"secret": "kc-tls"})
    e, p = env(s), pod(s)
    assert e["KC_HTTP_ENABLED"] == "false" and e["KC_HTTPS_PORT"] == "8443"
    assert e["KC_HTTPS_CERTIFICATE_FILE"] == f"{keycloak_config.TLS_MOUNT_PATH}/tls.crt"
    assert e["KC_HTTPS_CERTIFICATE_KEY_FILE"] == f"{keycloak_config.TLS_MOUNT_PATH}/tls.key"
    assert p["volumes"] == [{"name": "tls", "secret": {"secretName": "kc-tls"}}]
    container = p["containers"][0]
    assert container["volumeMounts"][0]["readOnly"] is True
    assert {probe["httpGet"]["scheme"] for k, probe in container.items() if k.endswith("Probe")} == {"HTTPS"}
    ports = children.public_service(OWNER, "a", s)["spec"]["ports"]
    assert [(x["name"], x["port"]) for x in ports] == [("https", 8443)]
    assert "kc-tls" in keycloak_config.referenced_secrets(s, "kc-initial-admin")


def test_http_stays_on_beside_tls_only_when_asked() -> None:
    s = spec(tls={"secret": "kc-tls", "httpEnabled": True})
    assert env(s)["KC_HTTP_ENABLED"] == "true"
    ports = children.public_service(OWNER, "a", s)["spec"]["ports"]
    assert [(x["name"], x["port"]) for x in ports] == [("https", 8443), ("http", 8080)]


def test_the_operator_logs_in_over_https_checking_the_tls_secrets_ca() -> None:
    keycloaks = {("ns", "kc"): {"spec": {**BASE, "tls": {"secret": "kc-tls"}}}}
    obj = {
        "kind": names.REALM_KIND,
        "metadata": {"namespace": "ns", "name": "r"},
        "spec": {"server": {"keycloak": {"name": "kc"}}},
    }
    target = realm_target(obj, keycloaks)
    assert target.server is not None and target.server.url == "http://kc-service.ns.svc.cluster.local.:8080"
    cred = target.credentials
    assert cred is not None and cred.endpoint == "https://kc-service.ns.svc.cluster.local.:8443"
    assert cred.ca_secret == "kc-tls" and cred.server_owned


async def test_a_fully_qualified_name_is_checked_without_its_trailing_dot() -> None:
    seen: list[Any] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.extensions.get("sni_hostname"))
        return httpx.Response(200, json={})

    async with httpx.AsyncClient(transport=CappedTransport(1000, inner=httpx.MockTransport(answer))) as c:
        await c.get("https://kc-service.ns.svc.cluster.local.:8443/x")
        await c.get("https://sso.example.com/x")
    assert seen == ["kc-service.ns.svc.cluster.local", None]
