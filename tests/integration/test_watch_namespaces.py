"""An operator restricted to a list of namespaces, with the chart's RBAC for that case, on the real API server
and the real Keycloak: a watched namespace that is deleted, or that the operator may no longer read, never
stalls replication in the other namespaces, and nothing of it is deleted from Keycloak because its LIST
failed.

With `watchNamespaces` the chart binds the operator's role by a RoleBinding in each watched namespace, so
deleting one takes the operator's access to it along: its LISTs there answer 403 from then on. A replication
round covers a whole server, every namespace's realms on it: one namespace's refusal must not abort it.

The operator here is a process of its own acting as a ServiceAccount (a bound token) with exactly the chart's
ClusterRoles and bindings for a namespace list, built from the rules the chart is generated from
(models/rbac.py); the session's operator is stopped meanwhile. Every realm targets the module's Keycloak by
URL with an admin Secret of its own namespace, so all of them are in one round.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import localcluster
from keycloak_operator.kernel import names
from keycloak_operator.models import rbac
from localcluster.keycloak import KeycloakProcess
from localcluster.keycloak_api import KeycloakApi
from localcluster.operator_process import OperatorProcess
from tests.integration.support.kubectl import Kubectl, wait_for

pytestmark = pytest.mark.integration

REALM_RES = f"{names.REALM_PLURAL}.{names.GROUP}"
CLIENT_RES = f"{names.CLIENT_PLURAL}.{names.GROUP}"
ADMIN_SECRET = "kc-admin"
CONVERGE_S = 60  # a realm or client on a healthy server is replicated within seconds here (resync: 3 s)


@pytest.fixture(scope="module")
def keycloak() -> Iterator[KeycloakProcess]:
    kc = KeycloakProcess()
    kc.start()
    yield kc
    kc.stop()
    kc.cleanup()


@pytest.fixture(scope="module")
def api(keycloak: KeycloakProcess) -> KeycloakApi:
    return KeycloakApi(keycloak)


@dataclass
class Restricted:
    """An operator watching namespaces `a` and `b` only, as the chart's ServiceAccount `name` would."""

    operator: OperatorProcess
    name: str
    a: str
    b: str
    as_operator: Kubectl  # kubectl with the operator's own token

    def binding(self, namespace: str) -> dict[str, Any]:
        return role_binding(self.name, namespace, self.operator_namespace)

    @property
    def operator_namespace(self) -> str:
        return f"{self.name}-system"

    def may_list_realms(self, namespace: str) -> bool:
        result = self.as_operator.run("auth", "can-i", "list", REALM_RES, "-n", namespace, check=False)
        return result.stdout.strip() == "yes"


def role_binding(name: str, namespace: str, sa_namespace: str) -> dict[str, Any]:
    """The chart's RoleBinding of the namespaced ClusterRole in one watched namespace."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": name, "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": sa_namespace}],
    }


def chart_rbac(name: str, sa_namespace: str, watched: list[str]) -> list[dict[str, Any]]:
    """What the chart renders with watchNamespaces: the cluster rules plus the restricted ones, bound
    cluster-wide; the namespaced rules, bound in each watched namespace."""
    group = "rbac.authorization.k8s.io"
    subject = [{"kind": "ServiceAccount", "name": name, "namespace": sa_namespace}]
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": sa_namespace}},
        {
            "apiVersion": f"{group}/v1",
            "kind": "ClusterRole",
            "metadata": {"name": f"{name}-cluster"},
            "rules": rbac.rules("cluster") + rbac.rules("restricted"),
        },
        {
            "apiVersion": f"{group}/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"{name}-cluster"},
            "roleRef": {"apiGroup": group, "kind": "ClusterRole", "name": f"{name}-cluster"},
            "subjects": subject,
        },
        {
            "apiVersion": f"{group}/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": rbac.rules("namespaced"),
        },
        *(role_binding(name, ns, sa_namespace) for ns in watched),
    ]


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
        "spec": {"server": server, "realmName": realm_name(namespace, name), **spec},
    }


def realm_name(namespace: str, name: str) -> str:
    return f"{name}-{namespace}"  # realm names are one namespace in Keycloak: each test's are its own


def client(namespace: str, name: str, realm_ref: str) -> dict[str, Any]:
    return {
        "apiVersion": names.API_VERSION,
        "kind": names.CLIENT_KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"realm": {"name": realm_ref}, "clientId": f"{name}-app", "publicClient": True},
    }


def phase(kubectl: Kubectl, res: str, namespace: str, name: str) -> str:
    obj = kubectl.get(res, name, namespace) or {}
    return str((obj.get("status") or {}).get("phase", ""))


def wait_phase(kubectl: Kubectl, res: str, namespace: str, name: str, want: str) -> None:
    wait_for(
        f"{res} {namespace}/{name} {want}",
        lambda: phase(kubectl, res, namespace, name) == want,
        CONVERGE_S,
    )


def release(kubectl: Kubectl, res: str, namespace: str) -> None:
    """Takes the operator's finalizer off what it can no longer reach (as the troubleshooting guide says)."""
    for obj in kubectl.list(res, namespace):
        patch = '{"metadata":{"finalizers":null}}'
        name = obj["metadata"]["name"]
        kubectl.run("patch", res, name, "-n", namespace, "--type=merge", "-p", patch, check=False)


@pytest.fixture
def restricted(
    request: pytest.FixtureRequest,
    cluster: localcluster.Cluster,
    kubectl: Kubectl,
    crds: None,
    session_operator_stopped: None,
    namespace_factory: Callable[..., str],
    keycloak: KeycloakProcess,
    tmp_path: Path,
) -> Iterator[Restricted]:
    a, b = namespace_factory("a"), namespace_factory("b")
    name = f"kcop-{uuid.uuid4().hex[:6]}"
    operator_ns = f"{name}-system"
    kubectl.run("create", "namespace", operator_ns)
    cluster_scoped = [
        f"clusterrole/{name}",
        f"clusterrole/{name}-cluster",
        f"clusterrolebinding/{name}-cluster",
    ]
    proc: OperatorProcess | None = None
    try:
        for obj in chart_rbac(name, operator_ns, [a, b]):
            kubectl.apply(obj)
        token = localcluster.service_account_kubeconfig(cluster, operator_ns, name)
        proc = OperatorProcess(token, tmp_path, resync_seconds=3)
        for ns in (a, b):
            kubectl.apply(admin_secret(keycloak, ns))
        # A test may give the operator settings of its own (indirect parametrization).
        proc.start("--namespace", a, "--namespace", b, env=getattr(request, "param", None))
        yield Restricted(proc, name, a, b, Kubectl(cluster.bin_dir / "kubectl", token))
    finally:
        # What is still declared goes first, deleted from Keycloak by the operator where it can still reach
        # it; what it cannot reach (a namespace it lost) keeps its finalizer, taken off by hand.
        for ns in (a, b):
            for res in (CLIENT_RES, REALM_RES):
                kubectl.run("delete", res, "--all", "-n", ns, "--wait=false", check=False)
        try:
            wait_for(
                "the test's realms and clients in the readable namespace deleted by the operator",
                lambda: not kubectl.list(REALM_RES, b) and not kubectl.list(CLIENT_RES, b),
                timeout=CONVERGE_S,
            )
        finally:
            for ns in (a, b):
                for res in (CLIENT_RES, REALM_RES):
                    release(kubectl, res, ns)
            if proc is not None:
                proc.stop()
            kubectl.run("delete", *cluster_scoped, "--wait=false", check=False)
            kubectl.run("delete", "namespace", operator_ns, "--wait=false", check=False)


def declare_and_wait_ready(kubectl: Kubectl, kc: KeycloakProcess, r: Restricted) -> None:
    kubectl.apply(realm(kc, r.a, "ra", displayName="A before"))
    kubectl.apply(realm(kc, r.b, "rb", displayName="B before"))
    kubectl.apply(client(r.b, "cb", "rb"))
    for ns, res, name in ((r.a, REALM_RES, "ra"), (r.b, REALM_RES, "rb"), (r.b, CLIENT_RES, "cb")):
        wait_phase(kubectl, res, ns, name, "Ready")


def change_b_and_wait_replicated(
    kubectl: Kubectl, kc: KeycloakProcess, api: KeycloakApi, r: Restricted
) -> None:
    """In the namespace that is still watched and readable: a realm changed, a new realm and a new client.
    Each must reach Keycloak while the other namespace cannot be listed."""
    kubectl.apply(realm(kc, r.b, "rb", displayName="B after"))
    kubectl.apply(realm(kc, r.b, "rb2"))
    kubectl.apply(client(r.b, "cb2", "rb2"))
    rb, rb2 = realm_name(r.b, "rb"), realm_name(r.b, "rb2")
    wait_for(
        f"realm {rb} changed in Keycloak",
        lambda: (api.realm(rb) or {}).get("displayName") == "B after",
        CONVERGE_S,
    )
    wait_for(f"client cb2-app created in new realm {rb2}", lambda: api.client(rb2, "cb2-app"), CONVERGE_S)
    wait_phase(kubectl, REALM_RES, r.b, "rb2", "Ready")
    wait_phase(kubectl, CLIENT_RES, r.b, "cb2", "Ready")


def rounds_failed(log: str) -> list[str]:
    """Replication rounds that raised (the work queue logs `processing <url> failed (n in a row)`): what one
    namespace's refused LIST did to every round before, for every namespace on the server."""
    return [line for line in log.splitlines() if "processing" in line and "failed (" in line]


def test_a_deleted_watched_namespace_never_stalls_replication_in_the_others(
    kubectl: Kubectl, keycloak: KeycloakProcess, api: KeycloakApi, restricted: Restricted
) -> None:
    r = restricted
    declare_and_wait_ready(kubectl, keycloak, r)

    kubectl.run("delete", "namespace", r.a, "--wait=false")
    wait_for(
        f"the operator's access to {r.a} gone with its RoleBinding",
        lambda: kubectl.get("rolebinding", r.name, r.a) is None and not r.may_list_realms(r.a),
        CONVERGE_S,
    )

    change_b_and_wait_replicated(kubectl, keycloak, api, r)
    assert r.operator.alive(), r.operator.tail()
    log = r.operator.log_text()
    assert f"watched namespace {r.a} is gone or being deleted and cannot be listed" in log, r.operator.tail()
    assert not rounds_failed(log), r.operator.tail()


def test_a_namespace_it_may_no_longer_read_keeps_its_objects_and_never_stalls_the_others(
    kubectl: Kubectl, keycloak: KeycloakProcess, api: KeycloakApi, restricted: Restricted
) -> None:
    """The namespace is still there, its realm live: its LIST failing must not read as "no realms", which
    would delete its realm from Keycloak. It is left as it is, and caught up once readable again."""
    r = restricted
    declare_and_wait_ready(kubectl, keycloak, r)
    ra = realm_name(r.a, "ra")

    kubectl.run("delete", "rolebinding", r.name, "-n", r.a)
    wait_for(f"the operator refused in {r.a}", lambda: not r.may_list_realms(r.a), CONVERGE_S)
    kubectl.apply(realm(keycloak, r.a, "ra", displayName="A after"))  # unseen by the operator for now

    change_b_and_wait_replicated(kubectl, keycloak, api, r)
    held = api.realm(ra)
    assert held is not None and held["displayName"] == "A before", held  # neither deleted nor written
    log = r.operator.log_text()
    assert f"watched namespace {r.a} cannot be listed" in log, r.operator.tail()
    assert not rounds_failed(log), r.operator.tail()

    kubectl.apply(r.binding(r.a))
    wait_for(
        f"realm {ra} caught up once {r.a} is readable again",
        lambda: (api.realm(ra) or {}).get("displayName") == "A after",
        CONVERGE_S,
    )
    wait_for(
        "the operator saying so",
        lambda: f"namespace {r.a} is read again" in r.operator.log_text(),
        CONVERGE_S,
    )
    assert r.operator.alive(), r.operator.tail()


CAP = 2  # KCOP_NAMESPACE_MAX_RESOURCES for the test below


@pytest.mark.parametrize("restricted", [{"KCOP_NAMESPACE_MAX_RESOURCES": str(CAP)}], indirect=True)
def test_a_namespace_over_the_cap_is_held_and_the_others_converge(
    kubectl: Kubectl, keycloak: KeycloakProcess, api: KeycloakApi, restricted: Restricted
) -> None:
    """A namespace holding more clients than the operator reads from one namespace is left out of every
    round as an unreadable one is: its realm and client in Keycloak are kept as they are, even one whose
    resource is deleted meanwhile, while the other namespace converges and no round counts as failed. Back
    within the cap, it catches up."""
    r = restricted
    declare_and_wait_ready(kubectl, keycloak, r)
    ra = realm_name(r.a, "ra")
    kubectl.apply(client(r.a, "ca", "ra"))
    wait_phase(kubectl, CLIENT_RES, r.a, "ca", "Ready")

    for name in ("ca2", "ca3"):
        kubectl.apply(client(r.a, name, "ra"))
    wait_for(
        f"the operator leaving {r.a} out",
        lambda: f"namespace {r.a} holds more than {CAP} keycloakclients" in r.operator.log_text(),
        CONVERGE_S,
    )
    kubectl.apply(realm(keycloak, r.a, "ra", displayName="A after"))  # not read while over the cap
    kubectl.run("delete", CLIENT_RES, "ca", "-n", r.a, "--wait=false")  # nor is this deletion

    change_b_and_wait_replicated(kubectl, keycloak, api, r)  # b holds 2 realms and 2 clients: at the cap
    held = api.realm(ra)
    assert held is not None and held["displayName"] == "A before", held  # neither deleted nor written
    assert api.client(ra, "ca-app") is not None  # its resource is being deleted, unseen: kept
    assert not rounds_failed(r.operator.log_text()), r.operator.tail()

    kubectl.run("delete", CLIENT_RES, "ca3", "-n", r.a, "--wait=false")  # back to 2 clients, one deleting
    wait_for(
        f"realm {ra} caught up once {r.a} is within the cap",
        lambda: (api.realm(ra) or {}).get("displayName") == "A after",
        CONVERGE_S,
    )
    wait_for(f"client ca2-app created in {ra}", lambda: api.client(ra, "ca2-app"), CONVERGE_S)
    wait_for(f"client ca-app deleted from {ra}", lambda: api.client(ra, "ca-app") is None, CONVERGE_S)
    assert f"namespace {r.a} is read again" in r.operator.log_text(), r.operator.tail()
    assert r.operator.alive(), r.operator.tail()
