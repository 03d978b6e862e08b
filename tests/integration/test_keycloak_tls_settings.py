"""The TLS settings the operator renders (core/keycloak_config.py), run by the real Keycloak server: HTTPS
from the mounted certificate, plain HTTP off, and the management interface (the pods' probes) on HTTPS too.

The files are where the test wrote them instead of the Secret's mount path, and the HTTPS port is a free one
instead of 8443; every other rendered TLS variable is passed as the operator renders it.
"""

from __future__ import annotations

import socket
import ssl
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from keycloak_operator.core import keycloak_config
from keycloak_operator.models.keycloak import KeycloakSpec
from localcluster import pki
from localcluster.keycloak import KEYCLOAK_VERSION, KeycloakProcess, free_port

pytestmark = pytest.mark.integration

TLS_ENVS = {"KC_HTTP_ENABLED", "KC_HTTPS_PORT", "KC_HTTPS_CERTIFICATE_FILE", "KC_HTTPS_CERTIFICATE_KEY_FILE"}


def rendered_tls_env(mount: Path, https_port: int) -> dict[str, str]:
    spec = KeycloakSpec.model_validate(
        {
            "image": f"quay.io/keycloak/keycloak:{KEYCLOAK_VERSION}",
            "database": {"cnpg": {"clusterName": "db"}},
            "tls": {"secret": "kc-tls"},
        }
    )
    rendered = keycloak_config.environment(spec, admin_secret="a", cache_cluster=None, discovery_dns=["d"])
    env = {e["name"]: e["value"] for e in rendered if e["name"] in TLS_ENVS}
    assert set(env) == TLS_ENVS, rendered
    assert env["KC_HTTPS_PORT"] == "8443" and env["KC_HTTP_ENABLED"] == "false"
    env = {k: v.replace(keycloak_config.TLS_MOUNT_PATH, str(mount)) for k, v in env.items()}
    return {**env, "KC_HTTPS_PORT": str(https_port)}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KeycloakProcess, int, Path]]:
    mount = tmp_path_factory.mktemp("tls")
    ca, _ = pki.serving(mount, dns=("localhost",), ips=("127.0.0.1",))  # tls.crt and tls.key, as mounted
    https_port = free_port()
    # `start`, as the operator's pods run it (start-dev turns plain HTTP on whatever the settings say).
    kc = KeycloakProcess(mode="start", env=rendered_tls_env(mount, https_port), management_ca=ca.cert)
    kc.start()  # ready = /health/ready UP over HTTPS on the management port, checked against the CA
    try:
        yield kc, https_port, ca.cert
    finally:
        kc.stop()
        kc.cleanup()


def test_https_is_served_with_the_mounted_certificate(server: tuple[KeycloakProcess, int, Path]) -> None:
    _, https_port, ca = server
    context = ssl.create_default_context(cafile=str(ca))
    with urllib.request.urlopen(
        f"https://localhost:{https_port}/realms/master", context=context, timeout=10
    ) as r:
        assert r.status == 200


def test_plain_http_is_off(server: tuple[KeycloakProcess, int, Path]) -> None:
    kc, _, _ = server
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", kc.http_port), timeout=5):
        pass


def test_the_probes_port_speaks_https(server: tuple[KeycloakProcess, int, Path]) -> None:
    kc, _, ca = server
    assert kc.management_url.startswith("https://")
    context = ssl.create_default_context(cafile=str(ca))
    with urllib.request.urlopen(f"{kc.management_url}/health/ready", context=context, timeout=10) as r:
        assert r.status == 200
