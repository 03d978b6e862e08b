"""The Helm chart on the real control plane, installed from the release artefacts as a user would, and least
privilege proven rather than asserted.

helm is built from its Go module (cached, like the control plane). `hack/release.sh` (`make release`) makes
the artefacts once for the module: the operator's image as an OCI archive, named for a private registry
(the Dockerfile's recipe without an engine, ADR 0015), the packaged chart, the CRDs and the CLI's wheel. The
archive is imported into the real node's containerd with `ctr images import`, and the packaged chart is
installed with the image's repository, tag and a pull secret set through values: its Deployment's pod runs
on the real node under the chart's ServiceAccount, reaching the API server through the `kubernetes` Service
as in any cluster, so every request it makes is authorized against the chart's RBAC. The Keycloaks it
manages here are kwok's simulated pods (the operator only talks to the API server for them).
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import localcluster
from keycloak_operator.kernel import names
from keycloak_operator.models import rbac
from keycloak_operator.shell.cli_target import Exit
from localcluster import app_images, manifests, realnode, stages, versions
from localcluster.helm import ensure_helm, operator_on_real_node
from localcluster.node_config import NODE_NAME
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

PROJECT = Path(__file__).resolve().parents[2]
CHART = PROJECT / "deploy" / "helm" / "keycloak-operator"
KC = f"{names.KEYCLOAK_PLURAL}.{names.GROUP}"
# What a platform team's registry would call the image; nothing is pulled from it (the archive is imported).
PRIVATE_REPOSITORY = "registry.kcop.test/platform/keycloak-operator"
PULL_SECRET = "regcred"
# helm built from its module renders for Kubernetes 1.20 unless told: the cluster's own version, as helm
# install reads from the API server.
KUBE_VERSION = f"--kube-version={versions.K8S_VERSION}"


class Release:
    """The artefacts hack/release.sh made (`KIND PATH` lines), the image named for PRIVATE_REPOSITORY."""

    def __init__(self, out: Path) -> None:
        self.version = yaml.safe_load((CHART / "Chart.yaml").read_text())["version"]
        self.image = f"{PRIVATE_REPOSITORY}:{self.version}"
        env = {**os.environ, "IMAGE": self.image, "KCOP_PYTHON": sys.executable}
        proc = subprocess.run(
            ["bash", str(PROJECT / "hack" / "release.sh"), str(out)],
            capture_output=True,
            text=True,
            timeout=app_images.BUILD_TIMEOUT,
            env=env,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        made = dict(line.split(" ", 1) for line in proc.stdout.splitlines() if " " in line)
        self.files = {kind: Path(path) for kind, path in made.items()}
        assert set(self.files) == {"image", "chart", "crds", "wheel", "sums"}, proc.stdout
        assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == sorted(
            p.name for p in self.files.values()
        )


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Release:
    return Release(tmp_path_factory.mktemp("dist"))


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
    text = run_helm(
        helm, cluster, "template", "kcop", str(CHART), "--namespace", "kcop-system", KUBE_VERSION, *args
    )
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


def test_the_packaged_chart_refuses_a_misspelt_value_and_an_older_kubernetes(
    helm: Path, cluster: localcluster.Cluster, release: Release
) -> None:
    chart = str(release.files["chart"])
    run_helm(helm, cluster, "lint", "--strict", chart)
    typo = "--set=imagePullSecret[0].name=regcred"  # imagePullSecrets
    nested = "--set=image.pullpolicy=Never"  # image.pullPolicy
    for argv in (
        ["lint", "--strict", chart, typo],
        ["lint", "--strict", chart, nested],
        ["template", "kcop", chart, KUBE_VERSION, typo],
        ["template", "kcop", chart, KUBE_VERSION, nested],
        # Against the real API server: refused before anything is created.
        ["install", "kcop-typo", chart, "--namespace", "kcop-typo", "--create-namespace", typo],
    ):
        proc = subprocess.run(
            [str(helm), *argv, "--kubeconfig", str(cluster.kubeconfig)], capture_output=True, text=True
        )
        said = proc.stdout + proc.stderr  # lint reports on stdout, the others on stderr
        assert proc.returncode != 0, argv
        assert "additional properties" in said and "not allowed" in said, said
    listed = run_helm(helm, cluster, "list", "--all-namespaces", "--short")
    assert "kcop-typo" not in listed.split()
    older = subprocess.run(
        [str(helm), "template", "kcop", chart, "--kube-version=1.29.9"], capture_output=True, text=True
    )
    assert older.returncode != 0 and "chart requires kubeVersion: >=1.30.0-0" in older.stderr, older.stderr
    # The image archive as registry tooling reads it (what `skopeo copy oci-archive:` pushes): the manifest
    # containerd imports.
    inspected = subprocess.run(
        ["skopeo", "inspect", f"oci-archive:{release.files['image']}"], capture_output=True, text=True
    )
    assert inspected.returncode == 0, inspected.stderr
    assert json.loads(inspected.stdout)["Digest"] == app_images.manifest_digest(release.files["image"])
    # The CRDs as one YAML are the chart's and the repository's.
    assert release.files["crds"].read_text() == (PROJECT / "deploy" / "crds" / "crds.yaml").read_text()


def test_the_cli_wheel_installs_as_a_tool_and_reads_the_cluster(
    cluster: localcluster.Cluster, release: Release, tmp_path: Path
) -> None:
    """`uv tool install` of the release's wheel into an environment of its own (none of this checkout's),
    then the command against the cluster its kubeconfig reaches: a Keycloak that is not there is exit 6."""
    pinned = re.search(r"^UV_VERSION := (\S+)$", (PROJECT / "Makefile").read_text(), re.M)
    assert pinned, "no UV_VERSION in the Makefile"
    uv = versions.cache_root() / f"uv-{pinned.group(1)}" / "bin" / "uv"  # what `make setup` installed
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "UV_TOOL_DIR": str(tmp_path / "tools"),
        "UV_TOOL_BIN_DIR": str(tmp_path / "bin"),
        "UV_CACHE_DIR": os.environ.get("UV_CACHE_DIR") or str(Path.home() / ".cache" / "uv"),
        "UV_PYTHON_DOWNLOADS": "never",
        **{k: v for k, v in os.environ.items() if k in ("SSL_CERT_FILE", "HTTPS_PROXY", "https_proxy")},
    }
    installed = subprocess.run(
        [str(uv), "tool", "install", str(release.files["wheel"])],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert installed.returncode == 0, installed.stderr
    command = tmp_path / "bin" / "keycloak-operator"
    said = subprocess.run([str(command), "--version"], env=env, capture_output=True, text=True, timeout=60)
    assert said.stdout.strip() == f"keycloak-operator {release.version}", said
    asked = subprocess.run(
        [str(command), "status", "nope", "-n", "default", "--kubeconfig", str(cluster.kubeconfig)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert asked.returncode == Exit.NOT_FOUND, asked.stderr
    assert asked.stderr.startswith("keycloak-operator status: Keycloak default/nope not found (context ")


class Installed:
    """A release of the packaged chart, its operator running as the chart's pod on the real node from the
    release's image, named (repository, tag) and with a pull secret, through values, as a user would."""

    def __init__(
        self, helm: Path, cluster: localcluster.Cluster, kubectl: Kubectl, release: Release, *sets: str
    ) -> None:
        self.helm, self.cluster, self.kubectl = helm, cluster, kubectl
        self.release = f"kcop-{uuid.uuid4().hex[:6]}"
        self.namespace = f"{self.release}-system"
        self.image = release.image
        # The chart's own pullPolicy (IfNotPresent): the image is on the node, as after a pull.
        values = [
            "resyncSeconds=5",
            "image.pullPolicy=IfNotPresent",
            f"imagePullSecrets[0].name={PULL_SECRET}",
        ]
        try:
            kubectl.run("create", "namespace", self.namespace)
            kubectl.apply(pull_secret(self.namespace))
            run_helm(
                helm,
                cluster,
                "install",
                self.release,
                str(release.files["chart"]),
                "--namespace",
                self.namespace,
                *operator_on_real_node(release.image),
                *[f"--set={v}" for v in [*values, *sets]],
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

    def leftovers(self) -> list[str]:
        """What of the release is still there after `helm uninstall` (helm keeps the CRDs by design)."""
        selector = f"app.kubernetes.io/instance={self.release}"
        left = []
        for kind in ("deployments", "services", "serviceaccounts", "roles", "rolebindings"):
            left += [
                f"{kind}/{o['metadata']['name']}" for o in self.kubectl.list(kind, self.namespace, selector)
            ]
        for kind in ("clusterroles", "clusterrolebindings"):
            left += [f"{kind}/{o['metadata']['name']}" for o in self.kubectl.list(kind, None, selector)]
        listed = run_helm(self.helm, self.cluster, "list", "--namespace", self.namespace, "--short")
        return left + [f"helm release {name}" for name in listed.split()]

    def refusals(self) -> list[str]:
        """What RBAC refused the operator. Other 403s are not about its permissions: a namespace an earlier
        test is still deleting refuses new content to anyone (and the operator lets that be)."""
        return [line for line in self.log_text().splitlines() if "is forbidden: User" in line]


def pull_secret(namespace: str) -> dict[str, Any]:
    auth = base64.b64encode(b"robot:not-a-real-password").decode()
    config = {"auths": {PRIVATE_REPOSITORY.split("/")[0]: {"auth": auth}}}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": PULL_SECRET, "namespace": namespace},
        "type": "kubernetes.io/dockerconfigjson",
        "stringData": {".dockerconfigjson": json.dumps(config)},
    }


@pytest.fixture(scope="module")
def release_image(cluster: localcluster.Cluster, real_node: realnode.RealNode, release: Release) -> Release:
    """The release's image archive imported into the real node's containerd (`ctr images import`)."""
    app_images.ensure_on_node(cluster, release.files["image"], release.image)
    return release


@pytest.fixture
def installed(
    helm: Path,
    cluster: localcluster.Cluster,
    kubectl: Kubectl,
    release_image: Release,
    session_operator_stopped: None,
) -> Iterator[Installed]:
    installed = Installed(helm, cluster, kubectl, release_image)
    yield installed
    installed.uninstall()
    assert not installed.leftovers(), installed.leftovers()


def test_operator_with_the_charts_service_account_creates_upgrades_and_deletes(
    cluster: localcluster.Cluster, kubectl: Kubectl, installed: Installed, backup_crds: None, namespace: str
) -> None:
    assert kubectl.get("deployment", installed.release, installed.namespace) is not None
    pod = installed.wait_ready()
    assert pod["spec"]["nodeName"] == NODE_NAME
    assert pod["spec"]["serviceAccountName"] == installed.release
    # The image, its pull policy and the pull secret as set through values.
    assert pod["spec"]["imagePullSecrets"] == [{"name": PULL_SECRET}]
    container = pod["spec"]["containers"][0]
    assert (container["image"], container["imagePullPolicy"]) == (installed.image, "IfNotPresent")
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
    release_image: Release,
    session_operator_stopped: None,
    namespace_factory,
) -> Iterator[tuple[Installed, str, str]]:
    watched, other = namespace_factory("watched"), namespace_factory("other")
    installed = Installed(helm, cluster, kubectl, release_image, f"watchNamespaces={{{watched}}}")
    yield installed, watched, other
    installed.uninstall()
    assert not installed.leftovers(), installed.leftovers()


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
