"""Real Keycloak pods made by the operator on the real node: a 2-replica Keycloak on a real PostgreSQL pod
becomes Ready through its real probes, its two pods form one JGroups view (read from Keycloak's own log),
a realm and a confidential client replicate into it, a token is issued through its public Service, and a
patch upgrade under each strategy fails not one of the sign-ins sent throughout.

The images are built here (hack/build-*-image.sh, ADR 0013). The operator runs as a local process that
resolves names through the cluster's DNS, as a pod would (OperatorProcess(cluster_dns=...)).
"""

from __future__ import annotations

import base64
import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import localcluster
from keycloak_operator.core import names
from localcluster import app_images, realnode
from localcluster.node_config import DNS_SERVICE_IP, LABEL_KEY, LABEL_VALUE, NODE_NAME
from tests.integration.support import sampler, signins
from tests.integration.support.kubectl import Kubectl, wait_for
from tests.integration.support.operator_process import OperatorProcess

pytestmark = pytest.mark.integration

KEYCLOAK_VERSION = "26.7.3"
FROM_VERSION = "26.7.0"  # one minor line with KEYCLOAK_VERSION: Keycloak supports rolling between them
KC = f"keycloaks.{names.GROUP}"
ON_REAL_NODE = {
    "nodeSelector": {LABEL_KEY: LABEL_VALUE},
    "tolerations": [{"key": LABEL_KEY, "operator": "Exists", "effect": "NoSchedule"}],
}
DB_USER, DB_PASSWORD, DB_NAME = "keycloak", "a-real-password-for-a-real-db", "keycloak"
# "ISPN000094: Received new cluster view for channel ISPN: [a|1] (2) [a, b]"
VIEW = re.compile(r"Received new cluster view for channel (\S+): \[[^\]]*\] \((\d+)\) \[([^\]]*)\]")
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # ClusterIPs route here, no proxy


@pytest.fixture(scope="module")
def images(cluster: localcluster.Cluster, real_node: realnode.RealNode) -> dict[str, str]:
    return {
        "keycloak": app_images.keycloak(cluster, KEYCLOAK_VERSION),
        "from": app_images.keycloak(cluster, FROM_VERSION),
        "postgres": app_images.postgres(cluster),
    }


@pytest.fixture
def real_operator(
    cluster: localcluster.Cluster, crds: None, session_operator_stopped: None, tmp_path: Path
) -> Iterator[OperatorProcess]:
    """The operator, started for one test (stopped after it), resolving through the cluster's DNS."""
    proc = OperatorProcess(cluster.kubeconfig, tmp_path, cluster_dns=DNS_SERVICE_IP)
    proc.start("--all-namespaces")
    yield proc
    proc.stop()


def postgres(namespace: str, image: str) -> list[dict[str, Any]]:
    labels = {"app": "postgres"}
    env = {"POSTGRES_USER": DB_USER, "POSTGRES_PASSWORD": DB_PASSWORD, "POSTGRES_DB": DB_NAME}
    container = {
        "name": "postgres",
        "image": image,
        "imagePullPolicy": "Never",
        "env": [{"name": k, "value": v} for k, v in env.items()] + [{"name": "PGDATA", "value": "/data/pg"}],
        "ports": [{"containerPort": 5432}],
        "readinessProbe": {"exec": {"command": ["pg_isready", "-h", "127.0.0.1"]}, "periodSeconds": 2},
        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
    }
    pod_spec = {"containers": [container], "volumes": [{"name": "data", "emptyDir": {}}], **ON_REAL_NODE}
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "postgres", "namespace": namespace},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": pod_spec},
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "postgres", "namespace": namespace},
            "spec": {"selector": labels, "ports": [{"port": 5432, "targetPort": 5432}]},
        },
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "postgres-credentials", "namespace": namespace},
            "stringData": {"username": DB_USER, "password": DB_PASSWORD},
        },
    ]


def keycloak(namespace: str, image: str, **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": names.API_VERSION,
        "kind": names.KEYCLOAK_KIND,
        "metadata": {"name": "sso", "namespace": namespace},
        "spec": {
            "image": image,
            "replicas": 2,
            "database": {
                "external": {
                    "host": f"postgres.{namespace}.svc.cluster.local",
                    "database": DB_NAME,
                    "credentialsSecret": {"name": "postgres-credentials"},
                }
            },
            "scheduling": ON_REAL_NODE,
            **extra,
        },
    }


def what_served(watch: sampler.Sampler, at: float) -> str:
    """The public Service's ready endpoints and the pods, in the samples around `at` (for a failure)."""
    near = [x for x in watch.samples if at - 3 <= x.at <= at + 3]
    lines = []
    for sample in near:
        ready = sorted(sample.ready_addresses.get(names.public_service("sso"), frozenset()))
        pods = ", ".join(
            f"{p.name}({p.image.rsplit(':', 1)[-1]},{'ready' if p.ready else 'not ready'}"
            f"{',terminating' if p.terminating else ''})"
            for p in sample.pods.values()
            if p.labels.get(names.LABEL_INSTANCE) == "sso"
        )
        lines.append(f"  {sample.at - at:+.1f}s: service endpoints {ready}; pods {pods}")
    return "\n".join(lines)


def views(kubectl: Kubectl, namespace: str) -> dict[str, tuple[str, int, set[str]]]:
    """pod -> (channel, size, members) of the last cluster view its Keycloak logged."""
    out = {}
    for pod in kubectl.list("pods", namespace, selector=f"{names.LABEL_INSTANCE}=sso"):
        name = pod["metadata"]["name"]
        logs = kubectl.run("logs", "-n", namespace, name, check=False).stdout
        seen = VIEW.findall(logs)
        if seen:
            channel, size, members = seen[-1]
            out[name] = (channel, int(size), {m.strip() for m in members.split(",")})
    return out


def running(kubectl: Kubectl, namespace: str, version: str) -> dict[str, Any] | None:
    """Status once both replicas of `version` are Ready and nothing else is rolling."""
    status = (kubectl.get(KC, "sso", namespace) or {}).get("status") or {}
    versions = status.get("versions") or {}
    ok = (
        status.get("phase") == "Running"
        and status.get("readyReplicas") == 2
        and versions.get("currentVersion", "").startswith(f"{version}#")
        and not versions.get("nextVersion")
    )
    return status if ok else None


def start_keycloak(
    kubectl: Kubectl, namespace: str, images: dict[str, str], image: str, **extra: Any
) -> dict:
    for obj in postgres(namespace, images["postgres"]):
        kubectl.apply(obj)
    kubectl.apply(keycloak(namespace, image, **extra))
    version = image.rsplit(":", 1)[1]
    return wait_for(
        f"2 real Keycloak {version} pods Ready through their probes",
        lambda: running(kubectl, namespace, version),
        timeout=480,
        interval=2,
    )


def phase(kubectl: Kubectl, resource: str, namespace: str, name: str) -> str:
    return str(((kubectl.get(resource, name, namespace) or {}).get("status") or {}).get("phase", ""))


def replicate(kubectl: Kubectl, namespace: str, **client_spec: Any) -> str:
    """A KeycloakRealm `team` and a confidential KeycloakClient `backend`, Ready; returns its secret."""
    realm = {
        "apiVersion": names.API_VERSION,
        "kind": names.REALM_KIND,
        "metadata": {"name": "team", "namespace": namespace},
        "spec": {"server": {"keycloak": {"name": "sso"}}, "realmName": "team"},
    }
    client = {
        "apiVersion": names.API_VERSION,
        "kind": names.CLIENT_KIND,
        "metadata": {"name": "backend", "namespace": namespace},
        "spec": {
            "realm": {"name": "team"},
            "clientId": "backend",
            "standardFlowEnabled": False,
            "serviceAccountsEnabled": True,
            **client_spec,
        },
    }
    kubectl.apply(realm)
    kubectl.apply(client)
    realms, clients = f"{names.REALM_PLURAL}.{names.GROUP}", f"{names.CLIENT_PLURAL}.{names.GROUP}"
    wait_for("realm replicated", lambda: phase(kubectl, realms, namespace, "team") == "Ready", timeout=120)
    wait_for(
        "client replicated", lambda: phase(kubectl, clients, namespace, "backend") == "Ready", timeout=120
    )
    secret = kubectl.get("secret", names.client_secret("backend"), namespace)
    assert secret is not None
    return base64.b64decode(secret["data"]["clientSecret"]).decode()


def base_url(kubectl: Kubectl, namespace: str) -> str:
    service = kubectl.get("service", names.public_service("sso"), namespace)
    assert service is not None
    return f"http://{service['spec']['clusterIP']}:8080"


def token_for(url: str, form: dict[str, str]) -> dict[str, Any] | None:
    request = urllib.request.Request(url, data=urllib.parse.urlencode(form).encode())
    try:
        with _OPENER.open(request, timeout=10) as r:
            return dict(json.loads(r.read()))
    except (urllib.error.URLError, OSError):
        return None


def create_user(kubectl: Kubectl, namespace: str, username: str, password: str) -> None:
    """A user in realm `team` through the admin API, as the bootstrap admin the operator generated (users
    are not replicated kinds yet)."""
    admin = kubectl.get("secret", names.admin_secret("sso"), namespace)
    assert admin is not None
    creds = {k: base64.b64decode(v).decode() for k, v in admin["data"].items()}
    url = base_url(kubectl, namespace)
    issued = token_for(
        f"{url}/realms/master/protocol/openid-connect/token",
        {"grant_type": "password", "client_id": "admin-cli", **creds},
    )
    assert issued is not None
    user = {
        "username": username,
        "enabled": True,
        "email": f"{username}@example.test",
        "emailVerified": True,
        "firstName": "Real",
        "lastName": "User",
        "credentials": [{"type": "password", "value": password, "temporary": False}],
    }
    request = urllib.request.Request(
        f"{url}/admin/realms/team/users",
        data=json.dumps(user).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {issued['access_token']}", "Content-Type": "application/json"},
    )
    with _OPENER.open(request, timeout=20) as r:
        assert r.status == 201


@pytest.mark.parametrize("strategy", ["Recreate", "BlueGreen"])
def test_a_real_keycloak_replicates_issues_tokens_and_upgrades_under_load_failing_no_sign_in(
    cluster: localcluster.Cluster,
    kubectl: Kubectl,
    images: dict[str, str],
    session_operator_stopped: None,
    real_operator: OperatorProcess,
    namespace: str,
    strategy: str,
) -> None:
    """A 2-replica Keycloak on a real PostgreSQL pod, both on the real node, becomes Ready through its real
    probes and forms one JGroups view; a realm and a client replicate into it and tokens are issued through
    its Service. Then 26.7.0 to 26.7.3 (one minor line: Keycloak supports rolling) under the default
    strategy (which rolls in place) and under BlueGreen, with sign-ins sent back to back from before the
    change until after it completed: not one may fail."""
    policy = {"upgradePolicy": {"strategy": strategy}}
    status = start_keycloak(kubectl, namespace, images, images["from"], **policy)
    pods = kubectl.list("pods", namespace, selector=f"{names.LABEL_INSTANCE}=sso")
    assert {p["spec"]["nodeName"] for p in pods} == {NODE_NAME}
    assert all(p["status"]["containerStatuses"][0]["containerID"].startswith("containerd://") for p in pods)
    assert status["versions"]["currentVersion"].startswith(f"{FROM_VERSION}#")

    # One JGroups view of both pods, as Keycloak itself reports it.
    def one_view() -> dict | None:
        seen = views(kubectl, namespace)
        sizes = {size for _, size, _ in seen.values()}
        return seen if len(seen) == 2 and sizes == {2} else None

    wait_for("both pods in one JGroups view of 2", one_view, timeout=120, interval=2)

    # A realm and a client the operator replicates; a token through the Service; a wrong secret refused.
    secret = replicate(kubectl, namespace, directAccessGrantsEnabled=True)
    url = f"{base_url(kubectl, namespace)}/realms/team/protocol/openid-connect/token"
    form = {"grant_type": "client_credentials", "client_id": "backend", "client_secret": secret}
    issued = wait_for("a token through the public Service", lambda: token_for(url, form), timeout=60)
    assert issued["token_type"].lower() == "bearer" and issued["access_token"].count(".") == 2
    assert token_for(url, {**form, "client_secret": "not-the-secret"}) is None
    create_user(kubectl, namespace, "alice", "alice-password-1")
    login = signins.Login(
        f"{base_url(kubectl, namespace)}/realms/team/protocol/openid-connect/token",
        "backend",
        secret,
        "alice",
        "alice-password-1",
    )
    load = signins.SignIns(login, max_seconds=900).start()
    watch = sampler.for_cluster(cluster, namespace)
    watch.interval = 0.5
    with watch:
        try:
            wait_for("sign-ins before the change", lambda: load.count() >= 20, timeout=60)
            changed_at = time.monotonic()
            kubectl.apply(keycloak(namespace, images["keycloak"], **policy))
            wait_for(
                f"{KEYCLOAK_VERSION} rolled out ({strategy})",
                lambda: running(kubectl, namespace, KEYCLOAK_VERSION),
                timeout=600,
                interval=1,
            )
            after = load.count()
            wait_for("sign-ins after the change", lambda: load.count() >= after + 20, timeout=60)
        finally:
            attempts = load.stop()
    failed = [a for a in attempts if not a.ok]
    grants = {a.grant for a in attempts}
    assert grants == {"client_credentials", "password"}
    assert not failed, (
        f"{len(failed)} of {len(attempts)} sign-ins failed, from {failed[0].at - changed_at:+.1f} s to "
        f"{failed[-1].at - changed_at:+.1f} s after the change; first: {failed[:2]}\n"
        + what_served(watch, failed[0].at)
    )
    pods = kubectl.list("pods", namespace, selector=f"{names.LABEL_INSTANCE}=sso")
    assert {
        p["spec"]["containers"][0]["image"] for p in pods if not p["metadata"].get("deletionTimestamp")
    } == {images["keycloak"]}
