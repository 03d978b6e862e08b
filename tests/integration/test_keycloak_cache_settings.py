"""The cache cluster name setting, checked against the real Keycloak server (see ADR 0004).

Two servers boot side by side (one JVM each, ~30 s together when warm): one with the SPI option Keycloak 26.7
reads, one with the first-class 26.8 variable, which 26.7 ignores. When KEYCLOAK_VERSION moves to 26.8 the
second test fails on purpose: switch the operator to KC_CACHE_EMBEDDED_CLUSTER_NAME then. No skips: a
missing Java or distribution is a failure.
"""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from localcluster.keycloak import KEYCLOAK_VERSION, KeycloakProcess, ensure_distribution, free_port

pytestmark = pytest.mark.integration

SPI_CLUSTER_NAME_ENV = "KC_SPI_CACHE_EMBEDDED__DEFAULT__CLUSTER_NAME"  # what 26.7 reads
FIRST_CLASS_CLUSTER_NAME_ENV = "KC_CACHE_EMBEDDED_CLUSTER_NAME"  # 26.8 and later
DEFAULT_CLUSTER_NAME = "ISPN"


def _clustered(cluster_env: str, cluster_name: str) -> KeycloakProcess:
    # The cache settings the operator renders; JGroups bound to loopback on a port whose FD_SOCK2 twin
    # (port + 50000) is still a valid port, and an in-memory database so nothing outlives the test.
    env = {"KC_CACHE": "ispn", "KC_CACHE_STACK": "jdbc-ping", cluster_env: cluster_name}
    args = [
        "--db=dev-mem",
        "--cache-embedded-network-bind-address=127.0.0.1",
        f"--cache-embedded-network-bind-port={free_port(7800, 15000)}",
    ]
    return KeycloakProcess(env=env, args=args)


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, KeycloakProcess]]:
    ensure_distribution(KEYCLOAK_VERSION)  # download once, before two threads race for it
    kcs = {
        "spi": _clustered(SPI_CLUSTER_NAME_ENV, "kcop-spi-name"),
        "first_class": _clustered(FIRST_CLASS_CLUSTER_NAME_ENV, "kcop-first-class-name"),
    }
    try:
        with ThreadPoolExecutor(len(kcs)) as pool:
            for started in [pool.submit(kc.start) for kc in kcs.values()]:
                started.result()
        yield kcs
    finally:
        for kc in kcs.values():
            kc.cleanup()


def _cluster_lines(kc: KeycloakProcess, name: str) -> list[str]:
    return [
        kc.wait_for_log(f"ISPN000078: Starting JGroups channel `{name}` with stack `jdbc-ping`"),
        kc.wait_for_log(f"ISPN000094: Received new cluster view for channel {name}:"),
        kc.wait_for_log(f"Cluster name: {name}"),
    ]


def test_spi_option_sets_the_cluster_name(servers: dict[str, KeycloakProcess]) -> None:
    kc = servers["spi"]
    lines = _cluster_lines(kc, "kcop-spi-name")
    assert "(1)" in lines[1], lines[1]  # alone in its view: the view is named after our setting
    assert f"Cluster name: {DEFAULT_CLUSTER_NAME}" not in kc.log_text()


def test_first_class_variable_is_ignored_by_26_7(servers: dict[str, KeycloakProcess]) -> None:
    kc = servers["first_class"]
    assert KEYCLOAK_VERSION.startswith("26.7."), "re-check ADR 0004 for this Keycloak version"
    _cluster_lines(kc, DEFAULT_CLUSTER_NAME)
    assert "kcop-first-class-name" not in kc.log_text()


def test_bootstrap_admin_can_log_in(servers: dict[str, KeycloakProcess]) -> None:
    kc = servers["spi"]
    form = urllib.parse.urlencode(
        {
            "grant_type": "password",
            "client_id": "admin-cli",
            "username": kc.admin_username,
            "password": kc.admin_password,
        }
    ).encode()
    url = f"{kc.url}/realms/master/protocol/openid-connect/token"
    with urllib.request.urlopen(url, data=form, timeout=30) as resp:
        assert resp.status == 200
        assert json.loads(resp.read())["access_token"]
