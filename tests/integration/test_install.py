"""The Helm chart on the real control plane, and least privilege proven rather than asserted.

helm is built from its Go module (cached, like the control plane). The chart is installed for real, with the
operator's own image built here (hack/build-operator-image.sh, the Dockerfile's recipe without an engine): its
Deployment's pod runs on the real node under the chart's ServiceAccount, reaching the API server through the
`kubernetes` Service as in any cluster, so every request it makes is authorized against the chart's RBAC.
The Keycloaks it manages here are kwok's simulated pods (the operator only talks to the API server for them).
"""

from __future__ import annotations

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
from localcluster import app_images, realnode, stages
from localcluster.helm import ensure_helm, operator_on_real_node
from localcluster.node_config import NODE_NAME
from tests.integration.support import manifests
from tests.integration.support.kubectl import Kubectl, wait_for
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
    # One replica has no peering: its versions must never overlap in an update (ADR 0022).
    assert of_kind(everywhere, "Deployment")[0]["spec"]["strategy"] == {"type": "Recreate"}

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
    assert "strategy" not in of_kind(restricted, "Deployment")[0]["spec"]  # rolling, agreeing by peering
    assert not any(a.startswith("--ingress-") for a in container["args"])  # not restricted unless set
    shared = render(
        helm,
        cluster,
        "ingress.allowedClasses={nginx}",
        "ingress.allowedAnnotationKeys={nginx.ingress.kubernetes.io/*,example.com/team}",
        "ingress.allowedHostSuffixes={.example.com}",
    )
    shared_args = of_kind(shared, "Deployment")[0]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert [a for a in shared_args if a.startswith("--ingress-")] == [
        "--ingress-class=nginx",
        "--ingress-annotation-key=nginx.ingress.kubernetes.io/*",
        "--ingress-annotation-key=example.com/team",
        "--ingress-host=.example.com",
    ]
    args = of_kind(restricted, "Deployment")[0]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert (
        "--namespace=team-a" in args
        and "--namespace=team-b" in args
        and "--peering=keycloak-operator" in args
    )


class Installed:
    """A release of the chart, its operator running as the chart's pod on the real node."""

    def __init__(
        self, helm: Path, cluster: localcluster.Cluster, kubectl: Kubectl, image: str, *sets: str
    ) -> None:
        self.helm, self.cluster, self.kubectl = helm, cluster, kubectl
        self.release = f"kcop-{uuid.uuid4().hex[:6]}"
        self.namespace = f"{self.release}-system"
        values = ["resyncSeconds=5", *sets]
        try:
            run_helm(
                helm,
                cluster,
                "install",
                self.release,
                str(CHART),
                "--namespace",
                self.namespace,
                "--create-namespace",
                *operator_on_real_node(image),
                *[f"--set={v}" for v in values],
            )
        except BaseException:  # no fixture teardown runs for a release that never came to be
            uninstall = [str(helm), "uninstall", self.release, "--namespace", self.namespace]
            uninstall += ["--kubeconfig", str(cluster.kubeconfig)]
            subprocess.run(uninstall, capture_output=True, timeout=120, check=False)
            kubectl.run("delete", "namespace", self.namespace, "--wait=false", check=False)
            raise

    def pod(self) -> dict[str, Any] | None:
        selector = f"app.kubernetes.io/instance={self.release}"
        pods = self.kubectl.list("pods", self.namespace, selector=selector)
        live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        return live[0] if len(live) == 1 else None

    def wait_ready(self) -> dict[str, Any]:
        def ready() -> dict[str, Any] | None:
            pod = self.pod()
            conditions = ((pod or {}).get("status") or {}).get("conditions") or []
            ok = any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)
            return pod if ok else None

        try:
            return wait_for("the operator's pod Ready on the real node", ready, timeout=120, interval=1)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{self.describe()}") from None

    def describe(self) -> str:
        pod = self.pod()
        if pod is None:
            return self.kubectl.run("get", "pods,events", "-n", self.namespace, check=False).stdout
        return self.kubectl.run("describe", "pod", "-n", self.namespace, pod["metadata"]["name"]).stdout

    def restarts(self) -> int:
        pod = self.pod() or {}
        return sum(c.get("restartCount", 0) for c in (pod.get("status") or {}).get("containerStatuses") or [])

    def log_text(self) -> str:
        pod = self.pod()
        assert pod is not None, self.describe()
        name = pod["metadata"]["name"]
        return self.kubectl.run("logs", "-n", self.namespace, name, check=False).stdout

    def uninstall(self) -> None:
        run_helm(self.helm, self.cluster, "uninstall", self.release, "--namespace", self.namespace)
        self.kubectl.run("delete", "namespace", self.namespace, "--wait=false", check=False)

    def refusals(self) -> list[str]:
        """What RBAC refused the operator. Other 403s are not about its permissions: a namespace an earlier
        test is still deleting refuses new content to anyone (and the operator lets that be)."""
        return [line for line in self.log_text().splitlines() if "is forbidden: User" in line]


@pytest.fixture(scope="module")
def operator_image(cluster: localcluster.Cluster, real_node: realnode.RealNode) -> str:
    return app_images.operator(cluster)


@pytest.fixture
def installed(
    helm: Path,
    cluster: localcluster.Cluster,
    kubectl: Kubectl,
    operator_image: str,
    session_operator_stopped: None,
) -> Iterator[Installed]:
    release = Installed(helm, cluster, kubectl, operator_image)
    yield release
    release.uninstall()


def test_operator_with_the_charts_service_account_creates_upgrades_and_deletes(
    cluster: localcluster.Cluster, kubectl: Kubectl, installed: Installed, backup_crds: None, namespace: str
) -> None:
    assert kubectl.get("deployment", installed.release, installed.namespace) is not None
    pod = installed.wait_ready()
    assert pod["spec"]["nodeName"] == NODE_NAME
    assert pod["spec"]["serviceAccountName"] == installed.release
    assert pod["status"]["containerStatuses"][0]["containerID"].startswith("containerd://")
    old, new = f"{IMAGE}:26.7.0", f"{IMAGE}:26.7.3"
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
    assert installed.restarts() == 0, installed.describe()
    assert not installed.refusals(), installed.refusals()


@pytest.fixture
def restricted(
    helm: Path,
    cluster: localcluster.Cluster,
    kubectl: Kubectl,
    operator_image: str,
    session_operator_stopped: None,
    namespace_factory,
) -> Iterator[tuple[Installed, str, str]]:
    watched, other = namespace_factory("watched"), namespace_factory("other")
    release = Installed(helm, cluster, kubectl, operator_image, f"watchNamespaces={{{watched}}}")
    yield release, watched, other
    release.uninstall()


def test_restricted_to_a_namespace_it_is_refused_elsewhere_and_acts_nowhere_else(
    cluster: localcluster.Cluster, kubectl: Kubectl, restricted: tuple[Installed, str, str]
) -> None:
    installed, watched, other = restricted
    installed.wait_ready()
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
    assert installed.restarts() == 0, installed.describe()
    assert not installed.refusals(), installed.refusals()
