"""Real Keycloak pods made by the operator on the real node: a 2-replica Keycloak on a real PostgreSQL pod
becomes Ready through its real probes, its two pods form one JGroups view (read from Keycloak's own log),
a realm and a confidential client replicate into it, and a token is issued through its public Service.

The images are built here (hack/build-*-image.sh, ADR 0013). The operator runs as a local process that
resolves names through the cluster's DNS, as a pod would (OperatorProcess(cluster_dns=...)).
"""

from __future__ import annotations

import base64
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

import localcluster
from keycloak_operator.core import names
from localcluster import app_images
from localcluster.node_config import DNS_SERVICE_IP, LABEL_KEY, LABEL_VALUE, NODE_NAME
from tests.integration.support.kubectl import Kubectl, wait_for
from tests.integration.support.operator_process import OperatorProcess

pytestmark = pytest.mark.integration

KEYCLOAK_VERSION = "26.7.3"
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
def images(cluster: localcluster.Cluster) -> dict[str, str]:
    return {
        "keycloak": app_images.keycloak(cluster, KEYCLOAK_VERSION),
        "postgres": app_images.postgres(cluster),
    }


@pytest.fixture(scope="module")
def real_operator(
    cluster: localcluster.Cluster, crds: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    proc = OperatorProcess(
        cluster.kubeconfig, tmp_path_factory.mktemp("real-operator"), cluster_dns=DNS_SERVICE_IP
    )
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


def keycloak(namespace: str, image: str) -> dict[str, Any]:
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
        },
    }


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


def token(url: str, client_id: str, secret: str) -> dict[str, Any] | None:
    body = urllib.parse.urlencode(
        {"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret}
    ).encode()
    try:
        with _OPENER.open(urllib.request.Request(url, data=body, method="POST"), timeout=10) as r:
            return dict(json.loads(r.read()))
    except (urllib.error.URLError, OSError):
        return None


def test_a_two_replica_keycloak_runs_for_real_replicates_and_issues_tokens(
    kubectl: Kubectl,
    images: dict[str, str],
    session_operator_stopped: None,
    real_operator: OperatorProcess,
    namespace: str,
) -> None:
    real_operator.start("--all-namespaces")
    for obj in postgres(namespace, images["postgres"]):
        kubectl.apply(obj)
    kubectl.apply(keycloak(namespace, images["keycloak"]))

    def ready() -> dict | None:
        kc = kubectl.get(KC, "sso", namespace) or {}
        status = kc.get("status") or {}
        return status if status.get("phase") == "Running" and status.get("readyReplicas") == 2 else None

    status = wait_for("2 real Keycloak pods Ready through their probes", ready, timeout=480, interval=2)
    pods = kubectl.list("pods", namespace, selector=f"{names.LABEL_INSTANCE}=sso")
    assert {p["spec"]["nodeName"] for p in pods} == {NODE_NAME}
    assert all(p["status"]["containerStatuses"][0]["containerID"].startswith("containerd://") for p in pods)
    assert status["versions"]["currentVersion"].startswith(f"{KEYCLOAK_VERSION}#")

    # One JGroups view of both pods, as Keycloak itself reports it.
    def one_view() -> dict | None:
        seen = views(kubectl, namespace)
        sizes = {size for _, size, _ in seen.values()}
        return seen if len(seen) == 2 and sizes == {2} else None

    wait_for("both pods in one JGroups view of 2", one_view, timeout=120, interval=2)

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
        },
    }
    kubectl.apply(realm)
    kubectl.apply(client)
    for res, name in (
        (f"{names.REALM_PLURAL}.{names.GROUP}", "team"),
        (f"{names.CLIENT_PLURAL}.{names.GROUP}", "backend"),
    ):
        wait_for(
            f"{name} replicated",
            lambda res=res, name=name: (
                ((kubectl.get(res, name, namespace) or {}).get("status") or {}).get("phase") == "Ready"
            ),
            timeout=120,
            interval=1,
        )
    secret = kubectl.get("secret", names.client_secret("backend"), namespace)
    assert secret is not None
    client_secret = base64.b64decode(secret["data"]["clientSecret"]).decode()

    service = kubectl.get("service", names.public_service("sso"), namespace)
    url = f"http://{service['spec']['clusterIP']}:8080/realms/team/protocol/openid-connect/token"
    issued = wait_for(
        "a token through the public Service", lambda: token(url, "backend", client_secret), timeout=60
    )
    assert issued["token_type"].lower() == "bearer" and issued["access_token"].count(".") == 2
    assert token(url, "backend", "not-the-secret") is None
