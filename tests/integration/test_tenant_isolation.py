"""Tenant isolation against the real API server and the real Keycloak: no namespace reaches another's Secrets,
sends another's credentials anywhere, stalls a shared server or keeps the other tenants from converging.

The operator here is a process of its own with short limits (request deadline, response cap, revocation
grace), so that what takes minutes with the defaults takes seconds; the session's operator is stopped
meanwhile. What the operator read is checked in the API server's audit log, what it sent on loopback
listeners that play hostile servers, what it wrote inside Keycloak through Keycloak's admin API.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import localcluster
from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.marker import marker_attributes
from keycloak_operator.kernel import names
from localcluster import pki
from localcluster.keycloak import KeycloakProcess, free_port
from localcluster.keycloak_api import KeycloakApi
from localcluster.operator_process import OperatorProcess
from tests.integration.support.audit import operator_reads
from tests.integration.support.hostile_server import HostileServer
from tests.integration.support.kubectl import Kubectl, events, wait_for

pytestmark = pytest.mark.integration

REALM_RES = f"{names.REALM_PLURAL}.{names.GROUP}"
CLIENT_RES = f"{names.CLIENT_PLURAL}.{names.GROUP}"
KC_RES = f"{names.KEYCLOAK_PLURAL}.{names.GROUP}"
DEADLINE_S = 4  # the operator's total deadline per Keycloak request, here
GRACE_S = 15  # revocation grace, here: disabled after 15 s, deleted after 30 s (rounds come every 3 s)
CONVERGE_S = 60  # a realm and a client on a healthy server are Ready well within this (a few seconds here)
LIMITS = {
    "KCOP_KEYCLOAK_REQUEST_DEADLINE_SECONDS": str(DEADLINE_S),
    "KCOP_KEYCLOAK_MAX_RESPONSE_BYTES": str(1024 * 1024),
    "KCOP_REVOCATION_GRACE_SECONDS": str(GRACE_S),
}


@dataclass(frozen=True)
class Tls:
    url: str  # the same Keycloak over HTTPS, by a name its certificate carries
    ca_pem: str  # the private CA that signed it


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[pki.CertPair, pki.CertPair]:
    return pki.serving(tmp_path_factory.mktemp("kc-tls"), dns=("localhost",), ips=("127.0.0.1",))


@pytest.fixture(scope="module")
def https_port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def keycloak(
    kubectl: Kubectl, tls_files: tuple[pki.CertPair, pki.CertPair], https_port: int
) -> Iterator[KeycloakProcess]:
    """One server for the module, on plain HTTP and on HTTPS with a certificate from a CA of the test's own
    (the management interface stays plain, for the harness's readiness check)."""
    _, leaf = tls_files
    kc = KeycloakProcess(
        args=[
            f"--https-port={https_port}",
            f"--https-certificate-file={leaf.cert}",
            f"--https-certificate-key-file={leaf.key}",
            "--http-management-scheme=http",
        ]
    )
    kc.start()
    yield kc
    kc.stop()
    kc.cleanup()


@pytest.fixture(scope="module")
def tls(keycloak: KeycloakProcess, tls_files: tuple[pki.CertPair, pki.CertPair], https_port: int) -> Tls:
    ca, _ = tls_files
    return Tls(f"https://localhost:{https_port}", ca.cert.read_text())


@pytest.fixture(scope="module")
def api(keycloak: KeycloakProcess) -> KeycloakApi:
    return KeycloakApi(keycloak)


@pytest.fixture
def operator_proc(
    cluster: localcluster.Cluster, crds: None, session_operator_stopped: None, tmp_path: Path
) -> Iterator[OperatorProcess]:
    proc = OperatorProcess(cluster.kubeconfig, tmp_path, resync_seconds=3, extra_env=LIMITS)
    yield proc
    proc.stop()


@pytest.fixture
def isolated(operator_proc: OperatorProcess) -> OperatorProcess:
    operator_proc.start("--all-namespaces")
    return operator_proc


@pytest.fixture
def tidy(kubectl: Kubectl, operator_proc: OperatorProcess) -> Iterator[list[str]]:
    """Namespaces whose realms and clients must be gone before the operator (and this module's Keycloak)
    stops: a realm left holding its finalizer would keep its namespace Terminating for every later test.
    Whatever the operator has not deleted in time has its finalizer taken off, and the teardown fails."""
    namespaces: list[str] = []
    yield namespaces

    def left() -> list[tuple[str, str, str]]:
        return [
            (res, ns, o["metadata"]["name"])
            for ns in namespaces
            for res in (CLIENT_RES, REALM_RES)
            for o in kubectl.list(res, ns)
        ]

    for ns in namespaces:
        for res in (CLIENT_RES, REALM_RES):
            kubectl.run("delete", res, "--all", "-n", ns, "--wait=false", check=False)
    try:
        wait_for(
            "the test's realms and clients deleted by the operator", lambda: not left(), timeout=CONVERGE_S
        )
    finally:
        for res, ns, name in left():
            release(kubectl, res, ns, name)


def secret(namespace: str, name: str, username: str, password: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "stringData": {"username": username, "password": password},
    }


def realm(namespace: str, name: str, url: str, admin: str = "admin", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": names.API_VERSION,
        "kind": names.REALM_KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"server": {"external": {"url": url, "adminSecret": {"name": admin}}}, **spec},
    }


def client(namespace: str, name: str, realm_ref: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": names.API_VERSION,
        "kind": names.CLIENT_KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"realm": realm_ref, "clientId": name, **spec},
    }


def status(kubectl: Kubectl, res: str, namespace: str, name: str) -> dict[str, Any]:
    return dict((kubectl.get(res, name, namespace) or {}).get("status") or {})


def wait_phase(
    kubectl: Kubectl, res: str, ns: str, name: str, phase: str, timeout: float = CONVERGE_S
) -> dict:
    return wait_for(
        f"{res} {ns}/{name} {phase}",
        lambda: (s := status(kubectl, res, ns, name)).get("phase") == phase and s,
        timeout,
    )


def message(st: dict[str, Any]) -> str:
    return " ".join(str(c.get("message", "")) for c in st.get("conditions") or [])


def release(kubectl: Kubectl, res: str, namespace: str, name: str) -> None:
    """A realm on a server that never let the operator in keeps its finalizer (nothing proves the server
    holds nothing of it): the test takes it off by hand, as the troubleshooting guide says."""
    kubectl.run("delete", res, name, "-n", namespace, "--wait=false", check=False)
    kubectl.run(
        "patch",
        res,
        name,
        "-n",
        namespace,
        "--type=merge",
        "-p",
        '{"metadata":{"finalizers":null}}',
        check=False,
    )


def ghost(api: KeycloakApi, namespace: str, name: str) -> str:
    """A realm the operator made for a resource that is gone (its finalizer removed by hand): an orphan."""
    realm_name = f"ghost-{name}-{namespace}"
    attributes = marker_attributes(ObjectKey(names.REALM_KIND, namespace, name), "0" * 64)
    api.call("POST", "", {"realm": realm_name, "enabled": True, "attributes": attributes})
    return realm_name


# --- refused by the API server, naming the field ------------------------------------------------------------


HOSTILE = [
    (
        "a realm's admin Secret as a path",
        {
            "kind": "realm",
            "spec": {
                "server": {
                    "external": {
                        "url": "http://127.0.0.1:1",
                        "adminSecret": {"name": "../../team-b/secrets/sso-admin"},
                    }
                }
            },
        },
        "spec.server.external.adminSecret.name",
    ),
    (
        "a client's Secret as a path",
        {"kind": "client", "spec": {"realm": {"name": "r"}, "clientId": "c", "secretName": "../victim"}},
        "spec.secretName",
    ),
    (
        "a client's realm in a namespace with a slash",
        {"kind": "client", "spec": {"realm": {"name": "r", "namespace": "team-b/secrets"}, "clientId": "c"}},
        "spec.realm.namespace",
    ),
    (
        "a service-account role named twice",
        {
            "kind": "client",
            "spec": {
                "realm": {"name": "r"},
                "clientId": "c",
                "serviceAccountsEnabled": True,
                "serviceAccountRoles": {"realm": ["reader", "reader"]},
            },
        },
        "spec.serviceAccountRoles.realm",
    ),
    (
        "a URL with credentials in it",
        {
            "kind": "realm",
            "spec": {"server": {"external": {"url": "http://u:p@127.0.0.1:1", "adminSecret": {"name": "a"}}}},
        },
        "spec.server.external.url",
    ),
    (
        "a CNPG cluster name that climbs",
        {"kind": "keycloak", "spec": {"image": "kc:26.7.3", "database": {"cnpg": {"clusterName": "../x"}}}},
        "spec.database.cnpg.clusterName",
    ),
    (
        "a managed database Secret as a path",
        {
            "kind": "keycloak",
            "spec": {
                "image": "kc:26.7.3",
                "database": {"managed": {"host": "db", "credentialsSecret": {"name": "a/b"}}},
            },
        },
        "spec.database.managed.credentialsSecret.name",
    ),
    (
        "a Keycloak admin Secret as a path",
        {
            "kind": "keycloak",
            "spec": {
                "image": "kc:26.7.3",
                "database": {"cnpg": {"clusterName": "db"}},
                "adminSecret": {"name": ".."},
            },
        },
        "spec.adminSecret.name",
    ),
    (
        "an env name the kubelet would refuse",
        {
            "kind": "keycloak",
            "spec": {
                "image": "kc:26.7.3",
                "database": {"cnpg": {"clusterName": "db"}},
                "env": [{"name": "A=B"}],
            },
        },
        "spec.env[0].name",
    ),
    (
        "an env name that carries cache isolation",
        {
            "kind": "keycloak",
            "spec": {
                "image": "kc:26.7.3",
                "database": {"cnpg": {"clusterName": "db"}},
                "env": [{"name": "KC_SPI_CACHE_EMBEDDED__DEFAULT__CLUSTER_NAME", "value": "x"}],
            },
        },
        "spec.env[0].name",
    ),
    (
        "a JDBC URL parameter in a database name",
        {
            "kind": "keycloak",
            "spec": {
                "image": "kc:26.7.3",
                "database": {
                    "external": {
                        "host": "db",
                        "database": "kc?socketFactory=x",
                        "credentialsSecret": {"name": "db"},
                    }
                },
            },
        },
        "spec.database.external.database",
    ),
]


@pytest.mark.parametrize(("case", "obj", "field"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_a_hostile_object_is_refused_by_the_api_server_naming_the_field(
    kubectl: Kubectl, crds: None, namespace: str, case: str, obj: dict[str, Any], field: str
) -> None:
    kind = {"realm": names.REALM_KIND, "client": names.CLIENT_KIND, "keycloak": names.KEYCLOAK_KIND}[
        obj["kind"]
    ]
    manifest = {
        "apiVersion": names.API_VERSION,
        "kind": kind,
        "metadata": {"name": "x", "namespace": namespace},
        "spec": obj["spec"],
    }
    result = kubectl.apply(manifest, check=False)
    assert result.returncode != 0, f"{case}: accepted"
    assert field in result.stderr, result.stderr


@pytest.mark.parametrize("name", ["my.kc", "1kc", "Kc"])
def test_a_keycloak_name_no_service_could_carry_is_refused(
    kubectl: Kubectl, crds: None, namespace: str, name: str
) -> None:
    manifest = {
        "apiVersion": names.API_VERSION,
        "kind": names.KEYCLOAK_KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"image": "kc:26.7.3", "database": {"cnpg": {"clusterName": "db"}}},
    }
    result = kubectl.apply(manifest, check=False)
    assert result.returncode != 0 and "metadata.name" in result.stderr, result.stderr


# --- a round with hostile servers and orphans in it ---------------------------------------------------------


def test_hostile_servers_and_orphans_never_stop_another_tenant(
    cluster: localcluster.Cluster,
    kubectl: Kubectl,
    keycloak: KeycloakProcess,
    api: KeycloakApi,
    isolated: OperatorProcess,
    namespace_factory: Any,
    tidy: list[str],
) -> None:
    attacker, victim, absent = (
        namespace_factory("attacker"),
        namespace_factory("victim"),
        namespace_factory("absent"),
    )
    tidy.extend([attacker, victim, absent])
    servers = {mode: HostileServer(mode).start() for mode in ("record", "trickle", "bomb", "endless")}
    hostile = {mode: f"h-{mode}" for mode in servers}
    try:
        kubectl.apply(secret(attacker, "admin", "attacker", "attacker-password"))
        kubectl.apply(secret(victim, "admin", keycloak.admin_username, keycloak.admin_password))
        kubectl.apply(secret(victim, "victim", "root", "never-to-be-read"))  # no resource names it
        # Orphans: a realm of a namespace with a login on this server (deleted with that login), and one
        # of a namespace without one (nobody may delete it: it stays).
        deletable, stranded = ghost(api, victim, "gone"), ghost(api, absent, "gone")
        for mode, server in servers.items():
            kubectl.apply(realm(attacker, hostile[mode], server.url))
        # The same Keycloak under a second name: a resource there is "declared elsewhere" for the first.
        alias_url = keycloak.url.replace("127.0.0.1", "localhost")
        kubectl.apply(realm(victim, "alias", alias_url, realmName=f"alias-{victim}"))

        started = time.monotonic()
        kubectl.apply(realm(victim, "main", keycloak.url + "/", realmName=f"main-{victim}"))
        kubectl.apply(client(victim, "app", {"name": "main"}))
        wait_phase(kubectl, CLIENT_RES, victim, "app", "Ready")
        took = time.monotonic() - started
        assert api.client(f"main-{victim}", "app") is not None
        print(f"victim's client Ready in {took:.1f} s with four hostile servers and two orphans")

        # Each hostile server is reported on its own realm, with what went wrong.
        for mode, needle in {
            "record": "admin login failed (401)",
            "trickle": f"no complete answer within {DEADLINE_S} s",
            "bomb": "compressed response",
            "endless": "larger than",
        }.items():
            wait_for(
                f"{mode} server reported on its realm",
                lambda mode=mode, needle=needle: (
                    needle in message(status(kubectl, REALM_RES, attacker, hostile[mode]))
                ),
                timeout=CONVERGE_S,
            )
        # The orphan with a login of its own namespace is deleted; the other stays; the alias is kept.
        wait_for("the deletable orphan gone", lambda: api.realm(deletable) is None, timeout=CONVERGE_S)
        later = ghost(api, victim, "later")  # deleted by a later round, so the one above had finished
        wait_for("a later orphan gone", lambda: api.realm(later) is None, timeout=CONVERGE_S)
        assert api.realm(stranded) is not None
        assert api.realm(f"alias-{victim}") is not None
        wait_phase(kubectl, REALM_RES, victim, "alias", "Ready")

        # Credentials: the recording server saw the attacker's own password and nothing else; the victim's
        # unreferenced Secret was never read by anything but kubectl.
        assert servers["record"].passwords() == {"attacker-password"}
        assert all(
            keycloak.admin_password not in r.form.values() for s in servers.values() for r in s.requests
        )
        assert [r for r in operator_reads(cluster, victim) if r.name == "victim"] == []
        assert {r.name for r in operator_reads(cluster, attacker)} <= {"admin"}
        assert isolated.alive(), isolated.tail()
    finally:
        for name in hostile.values():
            release(kubectl, REALM_RES, attacker, name)
        for s in servers.values():
            s.stop()
        api.call("DELETE", f"/{stranded}")
        for name in ("app",):
            kubectl.run("delete", CLIENT_RES, name, "-n", victim, "--wait=false", check=False)
        kubectl.run("delete", REALM_RES, "--all", "-n", victim, "--wait=false", check=False)
        wait_for("victim's realms deleted", lambda: not kubectl.list(REALM_RES, victim), timeout=CONVERGE_S)


ROUND_BUDGET_S = 6  # KCOP_ROUND_BUDGET_SECONDS for the test below: a slow server's round runs out in seconds
CHART_MEMORY_LIMIT = 512 * 1024 * 1024  # the chart's limit on the operator's container


def converge(kubectl: Kubectl, namespace: str, name: str, url: str) -> float:
    """Seconds from declaring a realm and a client in it until the client is Ready."""
    started = time.monotonic()
    kubectl.apply(realm(namespace, name, url, realmName=f"{name}-{namespace}"))
    kubectl.apply(client(namespace, f"{name}-app", {"name": name}))
    wait_phase(kubectl, CLIENT_RES, namespace, f"{name}-app", "Ready")
    return time.monotonic() - started


def test_slow_huge_and_malformed_servers_delay_another_tenant_by_at_most_one_resync(
    kubectl: Kubectl,
    keycloak: KeycloakProcess,
    api: KeycloakApi,
    operator_proc: OperatorProcess,
    namespace_factory: Any,
    tidy: list[str],
) -> None:
    """Servers that let the login in and then misbehave within every per-request limit: one answering each
    call just inside the deadline (the round budget cuts it), one sending 8 MiB of `{},` that would parse
    to about 194 MiB (refused before parsing), one sending what is not JSON. Another namespace's realm on a
    healthy server converges within one resync of the time it takes alone, and the operator's peak memory
    stays under the chart's limit."""
    eight_mib = 8 * 1024 * 1024
    operator_proc.start(
        "--all-namespaces",
        env={
            "KCOP_ROUND_BUDGET_SECONDS": str(ROUND_BUDGET_S),
            "KCOP_KEYCLOAK_MAX_RESPONSE_BYTES": str(eight_mib),  # the huge answers get through the byte cap
        },
    )
    attacker, victim = namespace_factory("attacker"), namespace_factory("victim")
    tidy.extend([attacker, victim])
    kubectl.apply(secret(attacker, "admin", "attacker", "attacker-password"))
    kubectl.apply(secret(victim, "admin", keycloak.admin_username, keycloak.admin_password))
    alone = converge(kubectl, victim, "alone", keycloak.url)

    servers = {
        "slow": HostileServer("slow", pace=DEADLINE_S - 1).start(),
        "huge": HostileServer("huge", size=eight_mib - 1024).start(),
        "malformed": HostileServer("malformed").start(),
    }
    try:
        hostile_since = time.monotonic()
        for mode, server in servers.items():
            kubectl.apply(realm(attacker, f"h-{mode}", server.url))
        for mode, needle in {
            "slow": f"ran out its budget of {ROUND_BUDGET_S} s (KCOP_ROUND_BUDGET_SECONDS)",
            "huge": "answer refused, more than 250000 JSON values",
            "malformed": "the answer is not JSON",
        }.items():
            wait_for(
                f"{mode} server reported on its realm",
                lambda mode=mode, needle=needle: (
                    needle in message(status(kubectl, REALM_RES, attacker, f"h-{mode}"))
                ),
                timeout=CONVERGE_S,
            )
        beside = converge(kubectl, victim, "beside", keycloak.url)
        assert api.client(f"beside-{victim}", "beside-app") is not None
        peak = operator_proc.peak_rss_bytes()
        print(
            f"victim's realm and client Ready in {beside:.1f} s beside three hostile servers ({alone:.1f} s "
            f"alone); operator peak RSS {peak / 2**20:.0f} MiB"
        )
        assert beside <= alone + operator_proc.resync_seconds, (alone, beside)
        assert peak < CHART_MEMORY_LIMIT, peak
        # The servers whose answers were refused backed off: a round after 10 s, 20 s, 40 s..., where one per
        # resync (3 s) would have come without it.
        elapsed = time.monotonic() - hostile_since
        for mode in ("huge", "malformed"):
            logins = [r for r in servers[mode].requests if r.path.endswith("/protocol/openid-connect/token")]
            assert len(logins) <= 2 + math.log2(1 + elapsed / 10), (mode, len(logins), elapsed)
        assert operator_proc.alive(), operator_proc.tail()
    finally:
        for mode in servers:
            release(kubectl, REALM_RES, attacker, f"h-{mode}")
        for server in servers.values():
            server.stop()


# --- the allow-list ----------------------------------------------------------------------------------------


def test_the_allow_list_forbids_other_hosts_without_reading_their_secret(
    cluster: localcluster.Cluster,
    kubectl: Kubectl,
    keycloak: KeycloakProcess,
    api: KeycloakApi,
    operator_proc: OperatorProcess,
    namespace: str,
    tidy: list[str],
) -> None:
    tidy.append(namespace)
    operator_proc.start("--all-namespaces", "--external-server-host=127.0.0.1")
    recorder = HostileServer("record").start()
    try:
        kubectl.apply(secret(namespace, "admin", keycloak.admin_username, keycloak.admin_password))
        kubectl.apply(secret(namespace, "elsewhere", "someone", "elsewhere-password"))
        kubectl.apply(realm(namespace, "ok", keycloak.url, realmName=f"ok-{namespace}"))
        outside = recorder.url.replace("127.0.0.1", "localhost")
        kubectl.apply(realm(namespace, "out", outside, admin="elsewhere"))
        wait_phase(kubectl, REALM_RES, namespace, "ok", "Ready")
        st = wait_phase(kubectl, REALM_RES, namespace, "out", "Forbidden")
        assert "ExternalServerNotAllowed" in str(st["conditions"])
        assert recorder.requests == []
        assert [r for r in operator_reads(cluster, namespace) if r.name == "elsewhere"] == []
    finally:
        recorder.stop()
        kubectl.run("delete", REALM_RES, "--all", "-n", namespace, "--wait=false", check=False)
        wait_for("realms deleted", lambda: not kubectl.list(REALM_RES, namespace), timeout=CONVERGE_S)


# --- revocation and blocked deletes ------------------------------------------------------------------------


def test_a_namespace_removed_from_client_namespaces_is_disabled_then_deleted(
    kubectl: Kubectl,
    keycloak: KeycloakProcess,
    api: KeycloakApi,
    isolated: OperatorProcess,
    namespace_factory: Any,
    tidy: list[str],
) -> None:
    home, team = namespace_factory("home"), namespace_factory("team")
    tidy.extend([home, team])
    realm_name = f"shared-{home}"
    kubectl.apply(secret(home, "admin", keycloak.admin_username, keycloak.admin_password))
    kubectl.apply(realm(home, "shared", keycloak.url, realmName=realm_name, clientNamespaces=[team]))
    kubectl.apply(client(team, "guest", {"name": "shared", "namespace": home}))
    wait_phase(kubectl, CLIENT_RES, team, "guest", "Ready")
    assert (api.client(realm_name, "guest") or {}).get("enabled") is True

    kubectl.apply(realm(home, "shared", keycloak.url, realmName=realm_name, clientNamespaces=[]))
    wait_phase(kubectl, CLIENT_RES, team, "guest", "Forbidden")
    # The round after the clock started says when the object goes.
    st = wait_for(
        "the revocation schedule on the client",
        lambda: "disabled at" in message(s := status(kubectl, CLIENT_RES, team, "guest")) and s,
        timeout=CONVERGE_S,
    )
    assert st["forbiddenSince"] and st["phase"] == "Forbidden"
    wait_for(
        "guest disabled in Keycloak",
        lambda: (api.client(realm_name, "guest") or {}).get("enabled") is False,
        timeout=GRACE_S + CONVERGE_S,
    )
    assert wait_for("a Revoked event", lambda: events(kubectl, team, name="guest", reason="Revoked"))
    wait_for(
        "guest deleted from Keycloak",
        lambda: api.client(realm_name, "guest") is None,
        timeout=GRACE_S + CONVERGE_S,
    )
    assert wait_for("a Deleted event", lambda: events(kubectl, team, name="guest", reason="Deleted"))
    assert status(kubectl, CLIENT_RES, team, "guest")["phase"] == "Forbidden"  # the resource says why

    # A client of a namespace the realm does not allow never keeps the realm from being deleted.
    kubectl.run("delete", REALM_RES, "shared", "-n", home, "--wait=false")
    wait_for("realm deleted from Keycloak", lambda: api.realm(realm_name) is None, timeout=CONVERGE_S)
    wait_for(
        "realm resource gone", lambda: kubectl.get(REALM_RES, "shared", home) is None, timeout=CONVERGE_S
    )
    kubectl.run("delete", CLIENT_RES, "guest", "-n", team, "--wait=false")
    wait_for(
        "client resource gone", lambda: kubectl.get(CLIENT_RES, "guest", team) is None, timeout=CONVERGE_S
    )


def test_an_invalid_client_of_a_namespace_the_realm_does_not_allow_never_pins_it(
    kubectl: Kubectl,
    keycloak: KeycloakProcess,
    api: KeycloakApi,
    isolated: OperatorProcess,
    namespace_factory: Any,
    tidy: list[str],
) -> None:
    """Its namespace is judged before its spec: Forbidden, not InvalidSpec, and the realm's deletion does not
    wait for it (an Error would have kept the realm DeletionBlocked for as long as the stranger liked)."""
    home, stranger = namespace_factory("home"), namespace_factory("stranger")
    tidy.extend([home, stranger])
    realm_name = f"pinned-{home}"
    kubectl.apply(secret(home, "admin", keycloak.admin_username, keycloak.admin_password))
    kubectl.apply(realm(home, "shared", keycloak.url, realmName=realm_name))
    wait_phase(kubectl, REALM_RES, home, "shared", "Ready")
    # PEM-shaped, so the API server takes it; not a certificate, which only the operator's model checks.
    not_a_certificate = "-----BEGIN CERTIFICATE-----\n" + "A" * 64 + "\n-----END CERTIFICATE-----\n"
    kubectl.apply(
        client(
            stranger,
            "pin",
            {"name": "shared", "namespace": home},
            protocol="saml",
            saml={"signingCertificate": not_a_certificate},
        )
    )
    st = wait_phase(kubectl, CLIENT_RES, stranger, "pin", "Forbidden")
    assert f"does not allow clients from namespace {stranger} (spec.clientNamespaces)" in message(st)
    assert api.client(realm_name, "pin") is None

    kubectl.run("delete", REALM_RES, "shared", "-n", home, "--wait=false")
    reasons: set[str] = set()  # every reason the realm's status gave while it was being deleted

    def realm_gone() -> bool:
        obj = kubectl.get(REALM_RES, "shared", home)
        reasons.update(
            str(c.get("reason")) for c in ((obj or {}).get("status") or {}).get("conditions") or []
        )
        return obj is None

    wait_for("realm resource gone", realm_gone, timeout=CONVERGE_S)
    assert api.realm(realm_name) is None
    assert "DeletionBlocked" not in reasons, reasons
    kubectl.run("delete", CLIENT_RES, "pin", "-n", stranger, "--wait=false")
    wait_for(
        "client resource gone", lambda: kubectl.get(CLIENT_RES, "pin", stranger) is None, timeout=CONVERGE_S
    )


# --- a child the API server refuses ------------------------------------------------------------------------


def test_a_spec_whose_child_the_api_server_refuses_is_degraded_with_its_message(
    kubectl: Kubectl, isolated: OperatorProcess, namespace: str
) -> None:
    manifest = {
        "apiVersion": names.API_VERSION,
        "kind": names.KEYCLOAK_KIND,
        "metadata": {"name": "kc", "namespace": namespace},
        "spec": {
            "image": "quay.io/keycloak/keycloak:26.7.3",
            "database": {"external": {"host": "db", "credentialsSecret": {"name": "db"}}},
            # Each value is valid on its own; only the API server compares a request with its limit.
            "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}},
        },
    }
    kubectl.apply(secret(namespace, "db", "u", "p"))
    kubectl.apply(manifest)
    st = wait_for(
        "Degraded ChildRejected",
        lambda: next(
            (
                c
                for c in status(kubectl, KC_RES, namespace, "kc").get("conditions") or []
                if c["type"] == "Degraded" and c["reason"] == "ChildRejected"
            ),
            None,
        ),
    )
    assert "Deployment" in st["message"] and "less than or equal to cpu limit" in st["message"]
    assert wait_for("a Warning event", lambda: events(kubectl, namespace, name="kc", reason="ChildRejected"))
    # Fixed spec: rolled out.
    manifest["spec"]["resources"] = {"requests": {"cpu": "1"}}
    kubectl.apply(manifest)
    wait_for("Deployment created", lambda: kubectl.get("deployment", names.deployment("kc"), namespace))


def test_resource_names_the_pod_would_refuse_are_refused_by_the_crd(
    kubectl: Kubectl, crds: None, namespace: str
) -> None:
    for resources, field in [
        ({"requests": {"gpu": "1"}}, "spec.resources.requests"),
        ({"requests": {"example.com/gpu": "1"}}, "spec.resources"),  # an extended resource needs its limit
    ]:
        manifest = {
            "apiVersion": names.API_VERSION,
            "kind": names.KEYCLOAK_KIND,
            "metadata": {"name": "kc", "namespace": namespace},
            "spec": {
                "image": "kc:26.7.3",
                "database": {"cnpg": {"clusterName": "db"}},
                "resources": resources,
            },
        }
        result = kubectl.apply(manifest, check=False)
        assert result.returncode != 0 and field in result.stderr, result.stderr


# --- TLS to the admin endpoint -----------------------------------------------------------------------------


def test_an_https_server_is_trusted_only_through_the_ca_its_realm_names(
    kubectl: Kubectl,
    keycloak: KeycloakProcess,
    api: KeycloakApi,
    tls: Tls,
    isolated: OperatorProcess,
    namespace: str,
    tidy: list[str],
) -> None:
    """The admin login goes over HTTPS with the certificate checked: against the CA Secret the realm names,
    else the system's CAs, which do not know this server's private CA."""
    tidy.append(namespace)
    kubectl.apply(secret(namespace, "admin", keycloak.admin_username, keycloak.admin_password))
    kubectl.apply(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "sso-ca", "namespace": namespace},
            "stringData": {"ca.crt": tls.ca_pem},
        }
    )
    untrusted = realm(namespace, "untrusted", tls.url, realmName=f"untrusted-{namespace}")
    kubectl.apply(untrusted)
    trusted = realm(namespace, "trusted", tls.url, realmName=f"trusted-{namespace}")
    trusted["spec"]["server"]["external"]["caSecret"] = {"name": "sso-ca"}
    kubectl.apply(trusted)
    try:
        wait_phase(kubectl, REALM_RES, namespace, "trusted", "Ready")
        assert api.realm(f"trusted-{namespace}") is not None
        wait_for(
            "the untrusted realm refused on the certificate",
            lambda: (
                "CERTIFICATE_VERIFY_FAILED" in message(status(kubectl, REALM_RES, namespace, "untrusted"))
            ),
            timeout=CONVERGE_S,
        )
        assert api.realm(f"untrusted-{namespace}") is None
    finally:
        release(kubectl, REALM_RES, namespace, "untrusted")
        kubectl.run("delete", REALM_RES, "trusted", "-n", namespace, "--wait=false", check=False)
        wait_for(
            "trusted realm deleted", lambda: api.realm(f"trusted-{namespace}") is None, timeout=CONVERGE_S
        )


def test_watching_every_namespace_one_over_the_cap_is_held_and_the_others_converge(
    kubectl: Kubectl,
    keycloak: KeycloakProcess,
    api: KeycloakApi,
    operator_proc: OperatorProcess,
    namespace_factory: Any,
    tidy: list[str],
) -> None:
    """With every namespace watched (one LIST per kind), a namespace holding more clients than the cap
    (`KCOP_NAMESPACE_MAX_RESOURCES`, 2 here) is left out: its realm and client in Keycloak stay as they
    were, even the client whose resource is deleted meanwhile, while another namespace's realm and client
    converge and no round fails. Back within the cap, it catches up."""
    cap = 2
    operator_proc.start("--all-namespaces", env={"KCOP_NAMESPACE_MAX_RESOURCES": str(cap)})
    full, calm = namespace_factory("full"), namespace_factory("calm")
    tidy.extend([full, calm])
    for ns in (full, calm):
        kubectl.apply(secret(ns, "admin", keycloak.admin_username, keycloak.admin_password))
    converge(kubectl, full, "held", keycloak.url)  # realm held-<full>, client held-app
    held_realm = f"held-{full}"

    for name in ("extra-1", "extra-2"):
        kubectl.apply(client(full, name, {"name": "held"}))
    wait_for(
        f"the operator leaving {full} out",
        lambda: f"namespace {full} holds more than {cap} keycloakclients" in operator_proc.log_text(),
        timeout=CONVERGE_S,
    )
    kubectl.apply(realm(full, "held", keycloak.url, realmName=held_realm, displayName="changed"))
    kubectl.run("delete", CLIENT_RES, "held-app", "-n", full, "--wait=false")

    converge(kubectl, calm, "calm", keycloak.url)
    kept = api.realm(held_realm)
    assert kept is not None and not kept.get("displayName"), kept  # neither deleted nor written
    assert api.client(held_realm, "held-app") is not None  # its resource is being deleted, unseen: kept
    log = operator_proc.log_text()
    assert not [line for line in log.splitlines() if "processing" in line and "failed (" in line], log[-3000:]

    kubectl.run("delete", CLIENT_RES, "extra-2", "-n", full, "--wait=false")  # back within the cap
    wait_for(
        f"realm {held_realm} caught up",
        lambda: (api.realm(held_realm) or {}).get("displayName") == "changed",
        timeout=CONVERGE_S,
    )
    wait_for("held-app deleted", lambda: api.client(held_realm, "held-app") is None, timeout=CONVERGE_S)
