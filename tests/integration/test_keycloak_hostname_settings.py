"""The hostname and proxy settings the operator renders (core/keycloak_config.py), run by the real Keycloak
server in production mode: what the issuer of tokens becomes when a request carries a forged Host or
X-Forwarded-Host header. These are the claims docs/guide/keycloak.md and the HostnameFixed condition make.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any

import pytest

from keycloak_operator.core import keycloak_config
from keycloak_operator.models.keycloak import KeycloakSpec
from localcluster.keycloak import KEYCLOAK_VERSION, KeycloakProcess

pytestmark = pytest.mark.integration

FORGED = "evil.example"
PUBLIC = "https://sso.example.test"


def rendered_addressing(**spec: Any) -> dict[str, str]:
    """The KC_HOSTNAME* and KC_PROXY* variables the operator renders for `spec`, as the pods get them."""
    model = KeycloakSpec.model_validate(
        {
            "image": f"quay.io/keycloak/keycloak:{KEYCLOAK_VERSION}",
            "database": {"cnpg": {"clusterName": "db"}},
        }
        | spec
    )
    rendered = keycloak_config.environment(model, admin_secret="a", cache_cluster=None, discovery_dns=["d"])
    return {e["name"]: e["value"] for e in rendered if e["name"].startswith(("KC_HOSTNAME", "KC_PROXY"))}


def issuer(kc: KeycloakProcess, headers: dict[str, str]) -> str:
    conn = http.client.HTTPConnection("127.0.0.1", kc.http_port, timeout=20)
    try:
        conn.request("GET", "/realms/master/.well-known/openid-configuration", headers=headers)
        response = conn.getresponse()
        body = response.read()
        assert response.status == 200, body[:300]
        return str(json.loads(body)["issuer"])
    finally:
        conn.close()


def server(env: dict[str, str]) -> Iterator[KeycloakProcess]:
    kc = KeycloakProcess(mode="start", env=env)
    kc.start()
    try:
        yield kc
    finally:
        kc.stop()
        kc.cleanup()


@pytest.fixture(scope="module")
def defaults() -> Iterator[KeycloakProcess]:
    env = rendered_addressing()
    assert env == {"KC_HOSTNAME_STRICT": "false"}
    yield from server(env)


@pytest.fixture(scope="module")
def fixed() -> Iterator[KeycloakProcess]:
    # A proxy that this test's own address (loopback) is trusted as, so its forwarded host would be believed
    # if anything but the fixed hostname decided the issuer.
    env = rendered_addressing(
        hostname={"hostname": PUBLIC}, proxy={"headers": "xforwarded", "trustedAddresses": ["127.0.0.1"]}
    )
    assert env["KC_HOSTNAME"] == PUBLIC and env["KC_HOSTNAME_STRICT"] == "true"
    yield from server(env)


@pytest.fixture(scope="module")
def untrusted_proxy() -> Iterator[KeycloakProcess]:
    env = rendered_addressing(proxy={"headers": "xforwarded", "trustedAddresses": ["10.0.0.0/8"]})
    yield from server(env)


def test_without_spec_proxy_a_forwarded_host_is_ignored(defaults: KeycloakProcess) -> None:
    port = defaults.http_port
    got = issuer(
        defaults, {"Host": f"127.0.0.1:{port}", "X-Forwarded-Host": FORGED, "X-Forwarded-Proto": "https"}
    )
    assert got == f"http://127.0.0.1:{port}/realms/master"


def test_without_spec_hostname_the_issuer_follows_the_host_header(defaults: KeycloakProcess) -> None:
    """What the HostnameFixed=False condition warns about."""
    assert issuer(defaults, {"Host": FORGED}) == f"http://{FORGED}/realms/master"


def test_a_hostname_fixes_the_issuer_whatever_the_request_says(fixed: KeycloakProcess) -> None:
    for headers in (
        {"Host": FORGED},
        {"Host": f"127.0.0.1:{fixed.http_port}", "X-Forwarded-Host": FORGED, "X-Forwarded-Proto": "http"},
    ):
        assert issuer(fixed, headers) == f"{PUBLIC}/realms/master"


def test_forwarded_headers_from_an_untrusted_peer_are_ignored(untrusted_proxy: KeycloakProcess) -> None:
    port = untrusted_proxy.http_port
    got = issuer(untrusted_proxy, {"Host": f"127.0.0.1:{port}", "X-Forwarded-Host": FORGED})
    assert got == f"http://127.0.0.1:{port}/realms/master"
