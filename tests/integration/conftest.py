"""Session fixtures: one real control plane, the CRDs, and the operator as a real process."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import localcluster
from keycloak_operator.kernel import names
from localcluster import process, realnode, registry
from localcluster.node_config import DNS_SERVICE_IP
from localcluster.operator_process import OperatorProcess
from tests.integration.support.kubectl import Kubectl, wait_for
from tests.integration.support.session_operators import SESSION_OPERATORS, session_operators_stopped

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def cluster() -> localcluster.Cluster:
    # Builds the binaries on a new machine, starts or reuses the control plane. Any failure fails the tests.
    return localcluster.ensure_running(real_node=False)


@pytest.fixture(scope="session")
def real_node(cluster: localcluster.Cluster) -> realnode.RealNode:
    """The cluster's real node, for the tests that run real pods; its own fixture, so a real node that
    cannot start fails those tests (never skips them) and leaves the kwok tests alone."""
    return realnode.ensure_running(cluster)


@pytest.fixture(scope="session")
def image_registry(cluster: localcluster.Cluster, real_node: realnode.RealNode) -> registry.Registry:
    """The registry the real node pulls from (localcluster.registry), started if the cluster lacks it; a
    registry that cannot start fails the tests that push to it (never skips them)."""
    return registry.ensure_running(cluster.state_dir, cluster.layout.log(registry.NAME))


@pytest.fixture(scope="session")
def kubectl(cluster: localcluster.Cluster) -> Kubectl:
    return Kubectl(cluster.bin_dir / "kubectl", cluster.kubeconfig)


@pytest.fixture(scope="session")
def crds(kubectl: Kubectl) -> None:
    kubectl.run("apply", "--server-side", "--force-conflicts", "-f", str(ROOT / "deploy" / "crds"))
    kubectl.run("wait", "--for=condition=Established", "--timeout=60s", "crd", "-l", "", "--all")
    release_leftovers(kubectl)


def release_leftovers(kubectl: Kubectl) -> None:
    """A run stopped part-way (or a test's own operator stopped before its namespace was emptied) leaves a
    namespace Terminating, its replicated objects holding the operator's finalizers with no operator left to
    release them: it would never go, and a test that waits for a quiet cluster (the scale harness) would wait
    for it. Those finalizers only guard Keycloak-side state of a namespace being thrown away, so they go."""
    going = [
        n["metadata"]["name"]
        for n in kubectl.list("namespaces", None)
        if n.get("status", {}).get("phase") == "Terminating"
    ]
    if not going:
        return
    kinds = [c["metadata"]["name"] for c in kubectl.list("crds", None) if c["spec"]["group"] == names.GROUP]
    for ns in going:
        for kind in kinds:
            for obj in kubectl.list(kind, ns):
                held = obj["metadata"].get("finalizers") or []
                kept = [f for f in held if not f.startswith(f"{names.GROUP}/")]
                if kept != held:
                    patch = json.dumps({"metadata": {"finalizers": kept or None}})
                    kubectl.run(
                        "patch",
                        kind,
                        obj["metadata"]["name"],
                        "-n",
                        ns,
                        "--type=merge",
                        "-p",
                        patch,
                        check=False,
                    )


@pytest.fixture(scope="session")
def operator(
    cluster: localcluster.Cluster, crds: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    # test_realm_settings' upstream identity provider listens on http://127.0.0.1 (support/upstream_idp.py).
    # The switch covers every URL Keycloak calls (core/replication/called_urls.py): no test's client has a
    # back-channel logout URL on loopback, so it is only the providers' that need it.
    loopback = {"KCOP_IDP_ALLOW_LOOPBACK_HTTP": "true"}
    # Its metrics are served too: test_replication checks the dashboard's and the alerts' names on them.
    proc = OperatorProcess(
        cluster.kubeconfig,
        tmp_path_factory.mktemp("operator"),
        extra_env=loopback,
        metrics_port=process.free_port(),
    )
    proc.start("--all-namespaces")
    SESSION_OPERATORS.append(proc)
    yield proc
    SESSION_OPERATORS.remove(proc)
    proc.stop()


@pytest.fixture
def session_operator_stopped(crds: None) -> Iterator[None]:
    """For tests that run operators of their own (HA, RBAC): the session's operator, if a test before
    started it, must not act on the same objects meanwhile. It is started again afterwards."""
    with session_operators_stopped():
        yield


@pytest.fixture(scope="session")
def backup_crds(kubectl: Kubectl) -> None:
    """CloudNativePG's Backup and Cluster and the CSI VolumeSnapshot CRDs: their controllers cannot run on
    simulated nodes, so tests install the CRDs and play the controllers' part themselves."""
    kubectl.run(
        "apply", "--server-side", "-f", str(ROOT / "tests" / "integration" / "fixtures" / "backup-crds.yaml")
    )
    kubectl.run(
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        "crd/backups.postgresql.cnpg.io",
        "crd/clusters.postgresql.cnpg.io",
        "crd/volumesnapshots.snapshot.storage.k8s.io",
    )


@pytest.fixture
def real_operator(
    cluster: localcluster.Cluster, crds: None, session_operator_stopped: None, tmp_path: Path
) -> Iterator[OperatorProcess]:
    """The operator for one test on the real node (stopped after it), resolving names through the cluster's
    DNS as a pod would, so that it reaches the real Keycloaks by their Service names."""
    proc = OperatorProcess(cluster.kubeconfig, tmp_path, cluster_dns=DNS_SERVICE_IP)
    proc.start("--all-namespaces")
    yield proc
    proc.stop()


@pytest.fixture
def namespace(kubectl: Kubectl) -> Iterator[str]:
    name = f"t-{uuid.uuid4().hex[:8]}"
    kubectl.run("create", "namespace", name)
    wait_for("default service account", lambda: kubectl.get("serviceaccount", "default", name), timeout=30)
    yield name
    kubectl.run("delete", "namespace", name, "--wait=false", check=False)


@pytest.fixture
def namespace_factory(kubectl: Kubectl) -> Iterator[Callable[..., str]]:
    """More namespaces for one test (two teams, say); `make("bar")` names one `t-<hex>-bar`."""
    made: list[str] = []

    def make(suffix: str = "x") -> str:
        name = f"t-{uuid.uuid4().hex[:8]}-{suffix}"
        kubectl.run("create", "namespace", name)
        wait_for(
            "default service account", lambda: kubectl.get("serviceaccount", "default", name), timeout=30
        )
        made.append(name)
        return name

    yield make
    for name in made:
        kubectl.run("delete", "namespace", name, "--wait=false", check=False)
