"""The cache settings the operator renders, run on the real Keycloak server (see ADR 0004).

Two servers boot side by side (one JVM each, ~30 s together when warm) from the SAME cache environment,
taken from `keycloak_config.environment(...)`: cluster name, `kubernetes` stack and a DNS_PING query listing
two names, the first of which does not resolve. They must form one cluster named by the operator, found
through the second name. Only what a laptop process cannot have is replaced: the DNS names (`localhost` stands
in for the discovery Services), the database (in-memory H2; so mTLS between nodes is off, as its ephemeral
certificates live in the database and each server has its own) and the address (both nodes on 127.0.0.1, so
they take two neighbouring ports). No skips: a missing Java or distribution is a failure.
"""

from __future__ import annotations

import json
import re
import urllib.parse
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from keycloak_operator.core import keycloak_config
from keycloak_operator.core.cache_cluster import resolve_cache_cluster
from keycloak_operator.models.keycloak import KeycloakSpec
from localcluster.keycloak import KEYCLOAK_VERSION, KeycloakProcess, ensure_distribution, free_port_run

pytestmark = pytest.mark.integration

KEYCLOAK_NAME = "kcop-it"
UNRESOLVABLE = "kcop-it-green-discovery.invalid"  # RFC 6761: never resolves
DISCOVERY_DNS = [UNRESOLVABLE, "localhost"]
CACHE_ENVS = {"KC_CACHE", "KC_CACHE_STACK", "JAVA_OPTS_APPEND", *keycloak_config.CLUSTER_NAME_ENVS}
FD_SOCK2_OFFSET = 50000


def _spec() -> KeycloakSpec:
    return KeycloakSpec.model_validate(
        {
            "image": f"quay.io/keycloak/keycloak:{KEYCLOAK_VERSION}",
            "database": {"cnpg": {"clusterName": "db"}},
            "cacheIsolation": {"autoRevision": True},
        }
    )


def _cluster_name() -> str:
    spec = _spec()
    resolved = resolve_cache_cluster(KEYCLOAK_NAME, spec.cache_isolation, spec.image)
    assert resolved.name, resolved
    return resolved.name


def _rendered_cache_env() -> dict[str, str]:
    # discovery_dns became a list in keycloak_config; the operator passes the two discovery Services.
    rendered = keycloak_config.environment(
        _spec(), admin_secret="kcop-it-admin", cache_cluster=_cluster_name(), discovery_dns=DISCOVERY_DNS
    )
    env = {e["name"]: e["value"] for e in rendered if e["name"] in CACHE_ENVS}
    assert set(env) == CACHE_ENVS, rendered
    return env


def _node(cache_env: dict[str, str], bind_port: int) -> KeycloakProcess:
    env = dict(cache_env)
    # Pods each have an IP and share port 7800; here both share 127.0.0.1, so the second takes the next port
    # and discovery probes both. TRACE shows each DNS query (DefaultDNSResolver logs nothing above TRACE).
    env["JAVA_OPTS_APPEND"] = f"{env['JAVA_OPTS_APPEND']} -Djgroups.port_range=1"
    args = [
        "--db=dev-mem",
        "--cache-embedded-mtls-enabled=false",
        "--cache-embedded-network-bind-address=127.0.0.1",
        f"--cache-embedded-network-bind-port={bind_port}",
        "--log-level=INFO,org.jgroups.protocols.dns:TRACE",
    ]
    return KeycloakProcess(env=env, args=args)


@pytest.fixture(scope="module")
def servers() -> Iterator[list[KeycloakProcess]]:
    ensure_distribution(KEYCLOAK_VERSION)  # download once, before two threads race for it
    cache_env = _rendered_cache_env()
    bind_port = free_port_run(7800, 15000, 2, twin_offset=FD_SOCK2_OFFSET)
    kcs = [_node(cache_env, bind_port), _node(cache_env, bind_port)]
    try:
        with ThreadPoolExecutor(len(kcs)) as pool:
            for started in [pool.submit(kc.start) for kc in kcs]:
                started.result()
        yield kcs
    finally:
        for kc in kcs:
            kc.cleanup()


def test_rendered_settings_are_what_the_servers_run() -> None:
    env = _rendered_cache_env()
    assert env["KC_CACHE"] == "ispn"
    assert env["KC_CACHE_STACK"] == "kubernetes"
    assert env["JAVA_OPTS_APPEND"] == f"-Djgroups.dns.query={','.join(DISCOVERY_DNS)}"
    assert {env[name] for name in keycloak_config.CLUSTER_NAME_ENVS} == {_cluster_name()}


def test_rendered_cluster_name_is_in_effect(servers: list[KeycloakProcess]) -> None:
    # 26.7 reads the SPI variable, 26.8 the first-class one; the operator renders both (ADR 0004).
    assert KEYCLOAK_VERSION.startswith("26.7."), "re-check ADR 0004 for this Keycloak version"
    name = _cluster_name()
    for kc in servers:
        kc.wait_for_log(f"ISPN000078: Starting JGroups channel `{name}` with stack `kubernetes`")
        kc.wait_for_log(f"Cluster name: {name}")
        assert "Cluster name: ISPN" not in kc.log_text()


def test_every_name_of_the_dns_list_is_queried(servers: list[KeycloakProcess]) -> None:
    for kc in servers:
        kc.wait_for_log(f"resolving DNS query: {UNRESOLVABLE} of a type: A")
        kc.wait_for_log(f"failed to resolve query {UNRESOLVABLE}")
        kc.wait_for_log("resolving DNS query: localhost of a type: A")
        collected = kc.wait_for_log("entries collected from DNS")
        assert "127.0.0.1" in collected, collected


def test_nodes_found_through_the_second_name_form_one_cluster(servers: list[KeycloakProcess]) -> None:
    # Usually the second node joins the first; starts that race may instead form two views of one that
    # MERGE3 joins within 30 s (its max_interval in the kubernetes stack), logged as a MERGED view.
    two_members = re.compile(rf"cluster view for channel {re.escape(_cluster_name())}: .*\] \(2\) \[")
    for kc in servers:
        kc.wait_for_log(two_members, timeout=60)


def test_bootstrap_admin_can_log_in(servers: list[KeycloakProcess]) -> None:
    kc = servers[0]
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
