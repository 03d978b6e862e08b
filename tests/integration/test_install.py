"""The Helm chart on the real control plane, and least privilege proven rather than asserted.

helm is built from its Go module (cached, like the control plane). The chart is installed for real; its
Deployment's pods are simulated by kwok, so the operator runs as a local process with exactly the arguments
the chart renders, authenticated with a token of the chart's ServiceAccount: every request it makes is
authorized by the API server against the chart's RBAC.
"""

from __future__ import annotations

import socket
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import localcluster
from keycloak_operator.core import names
from keycloak_operator.models import rbac
from localcluster import stages
from localcluster.helm import ensure_helm
from tests.integration.support import manifests
from tests.integration.support.kubectl import Kubectl, wait_for
from tests.integration.support.operator_process import OperatorProcess
from tests.integration.test_blue_green import (
    CNPG,
    IMAGE,
    BackupController,
    bg_state,
    running,
    upgrade,
)

pytestmark = pytest.mark.integration

CHART = Path(__file__).resolve().parents[2] / "deploy" / "helm" / "keycloak-operator"
KC = f"{names.KEYCLOAK_PLURAL}.{names.GROUP}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def helm(cluster: localcluster.Cluster) -> Path:
    return ensure_helm()


def run_helm(helm: Path, cluster: localcluster.Cluster, *args: str) -> str:
    proc = subprocess.run(
        [str(helm), *args, "--kubeconfig", str(cluster.kubeconfig)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def render(helm: Path, cluster: localcluster.Cluster, *sets: str) -> list[dict[str, Any]]:
    args = [f"--set={s}" for s in sets]
    text = run_helm(helm, cluster, "template", "kcop", str(CHART), "--namespace", "kcop-system", *args)
    return [d for d in yaml.safe_load_all(text) if d]


def of_kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


def test_chart_lints_and_renders_least_privilege_rbac(helm: Path, cluster: localcluster.Cluster) -> None:
    run_helm(helm, cluster, "lint", "--strict", str(CHART))
    everywhere = render(helm, cluster)
    roles = {r["metadata"]["name"]: r for r in of_kind(everywhere, "ClusterRole")}
    assert roles["kcop"]["rules"] == rbac.rules("namespaced")
    assert roles["kcop-cluster"]["rules"] == rbac.rules("cluster")
    for role in roles.values():
        for rule in role["rules"]:
            assert "*" not in rule["apiGroups"] + rule["resources"] + rule["verbs"], rule
    assert {b["roleRef"]["name"] for b in of_kind(everywhere, "ClusterRoleBinding")} == {
        "kcop",
        "kcop-cluster",
    }
    assert not of_kind(everywhere, "RoleBinding") and not of_kind(everywhere, "ClusterKopfPeering")
    container = of_kind(everywhere, "Deployment")[0]["spec"]["template"]["spec"]["containers"][0]
    assert "--all-namespaces" in container["args"] and not any(
        a.startswith("--peering") for a in container["args"]
    )
    assert container["securityContext"]["readOnlyRootFilesystem"] is True

    restricted = render(helm, cluster, "watchNamespaces={team-a,team-b}", "replicas=2")
    bindings = of_kind(restricted, "RoleBinding")
    assert sorted(b["metadata"]["namespace"] for b in bindings) == ["team-a", "team-b"]
    assert {b["roleRef"]["name"] for b in of_kind(restricted, "ClusterRoleBinding")} == {"kcop-cluster"}
    cluster_role = next(
        r for r in of_kind(restricted, "ClusterRole") if r["metadata"]["name"] == "kcop-cluster"
    )
    assert cluster_role["rules"] == rbac.rules("cluster") + rbac.rules("restricted")
    assert sorted(p["metadata"]["namespace"] for p in of_kind(restricted, "KopfPeering")) == [
        "team-a",
        "team-b",
    ]
    args = of_kind(restricted, "Deployment")[0]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert (
        "--namespace=team-a" in args
        and "--namespace=team-b" in args
        and "--peering=keycloak-operator" in args
    )


class Installed:
    """A release of the chart, and the operator run with its arguments under its ServiceAccount's token."""

    def __init__(self, helm: Path, cluster: localcluster.Cluster, log_dir: Path, *sets: str) -> None:
        self.helm, self.cluster = helm, cluster
        self.release = f"kcop-{uuid.uuid4().hex[:6]}"
        self.namespace = f"{self.release}-system"
        values = [f"metrics.port={free_port()}", f"healthPort={free_port()}", *sets]
        run_helm(
            helm,
            cluster,
            "install",
            self.release,
            str(CHART),
            "--namespace",
            self.namespace,
            "--create-namespace",
            *[f"--set={v}" for v in values],
        )
        manifest = run_helm(helm, cluster, "get", "manifest", self.release, "--namespace", self.namespace)
        deployment = next(d for d in yaml.safe_load_all(manifest) if d and d["kind"] == "Deployment")
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        self.args = [a for a in container["args"] if a != "run"]
        env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
        token = localcluster.service_account_kubeconfig(cluster, self.namespace, self.release)
        self.operator = OperatorProcess(token, log_dir, extra_env=env)

    def uninstall(self, kubectl: Kubectl) -> None:
        self.operator.stop()
        run_helm(self.helm, self.cluster, "uninstall", self.release, "--namespace", self.namespace)
        kubectl.run("delete", "namespace", self.namespace, "--wait=false", check=False)

    def refusals(self) -> list[str]:
        """What RBAC refused the operator. Other 403s are not about its permissions: a namespace an earlier
        test is still deleting refuses new content to anyone (and the operator lets that be)."""
        return [line for line in self.operator.log_text().splitlines() if "is forbidden: User" in line]


@pytest.fixture
def installed(
    helm: Path,
    cluster: localcluster.Cluster,
    kubectl: Kubectl,
    session_operator_stopped: None,
    tmp_path: Path,
) -> Iterator[Installed]:
    release = Installed(helm, cluster, tmp_path)
    yield release
    release.uninstall(kubectl)


def test_operator_with_the_charts_service_account_creates_upgrades_and_deletes(
    cluster: localcluster.Cluster, kubectl: Kubectl, installed: Installed, backup_crds: None, namespace: str
) -> None:
    assert kubectl.get("deployment", installed.release, installed.namespace) is not None
    installed.operator.start(*installed.args)
    old, new = f"{IMAGE}:26.1.0", f"{IMAGE}:27.0.0"
    stages.apply_ready_delay(cluster.kubeconfig, new, 2)
    kubectl.apply(manifests.db_secret(namespace))
    kubectl.apply(manifests.db_secret(namespace, "kcdb-app"))
    backups = BackupController(kubectl, namespace, "backups.postgresql.cnpg.io")
    backups.start()
    try:
        upgrade(kubectl, namespace, "rbac", old, CNPG)  # BlueGreen policy, generated admin Secret
        wait_for("created and running", lambda: running(kubectl, namespace, "rbac", old), timeout=90)
        upgrade(kubectl, namespace, "rbac", new, CNPG)
        wait_for(
            "blue-green upgrade completed",
            lambda: (
                bg_state(kubectl, namespace, "rbac") == "Completed"
                and running(kubectl, namespace, "rbac", new)
            ),
            timeout=180,
        )
        assert len(kubectl.list("backups.postgresql.cnpg.io", namespace)) == 1
        kubectl.run("delete", KC, "rbac", "-n", namespace)
        wait_for(
            "children deleted with it",
            lambda: (
                kubectl.get("deployment", names.deployment("rbac"), namespace) is None
                and kubectl.get("service", names.public_service("rbac"), namespace) is None
            ),
            timeout=60,
        )
    finally:
        backups.stop.set()
        stages.remove(cluster.kubeconfig, new)
    assert installed.operator.alive()
    assert not installed.refusals(), installed.refusals()


@pytest.fixture
def restricted(
    helm: Path,
    cluster: localcluster.Cluster,
    kubectl: Kubectl,
    session_operator_stopped: None,
    namespace_factory,
    tmp_path: Path,
) -> Iterator[tuple[Installed, str, str]]:
    watched, other = namespace_factory("watched"), namespace_factory("other")
    release = Installed(helm, cluster, tmp_path, f"watchNamespaces={{{watched}}}")
    yield release, watched, other
    release.uninstall(kubectl)


def test_restricted_to_a_namespace_it_is_refused_elsewhere_and_acts_nowhere_else(
    cluster: localcluster.Cluster, kubectl: Kubectl, restricted: tuple[Installed, str, str]
) -> None:
    installed, watched, other = restricted
    installed.operator.start(*installed.args)
    for ns in (watched, other):
        kubectl.apply(manifests.db_secret(ns))
        kubectl.apply(manifests.keycloak("kc", ns))
    image = manifests.keycloak("kc", watched)["spec"]["image"]
    wait_for("the watched namespace's Keycloak running", lambda: running(kubectl, watched, "kc", image))
    assert kubectl.get("deployment", names.deployment("kc"), other) is None
    assert not (kubectl.get(KC, "kc", other) or {}).get("status")

    # The API server itself refuses the operator's identity outside its namespace.
    token = localcluster.service_account_kubeconfig(cluster, installed.namespace, installed.release)
    as_operator = Kubectl(cluster.bin_dir / "kubectl", token)
    for verb, resource in (("create", "deployments"), ("patch", "services"), ("get", "secrets")):
        assert (
            as_operator.run("auth", "can-i", verb, resource, "-n", other, check=False).stdout.strip() == "no"
        )
        assert (
            as_operator.run("auth", "can-i", verb, resource, "-n", watched, check=False).stdout.strip()
            == "yes"
        )
    refused = as_operator.run("create", "deployment", "probe", "--image=busybox", "-n", other, check=False)
    assert refused.returncode != 0 and "forbidden" in refused.stderr.lower()
    assert not installed.refusals(), installed.refusals()
