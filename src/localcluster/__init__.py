"""A real Kubernetes control plane on loopback for tests and the demo: kwok plays the kubelets of its fake
nodes, and one real node (kubelet, containerd, CNI, kube-proxy, CoreDNS) runs real pods that ask for it."""

from localcluster import control_plane, realnode, registry
from localcluster.cluster import Cluster
from localcluster.control_plane import ComponentError, current, status, stop
from localcluster.service_account import service_account_kubeconfig


def ensure_running(*, real_node: bool = True) -> Cluster:
    """The control plane with kwok's nodes and (unless told not to) the real node and the registry it pulls
    from, each reused when healthy, started (and built) if not: so a running cluster gains a stage it lacks.
    Raises ComponentError, realnode.PreflightError or build.BuildError naming what failed. Without the real
    node, kwok-only work (the scale bench) needs neither root nor containerd."""
    cluster = control_plane.ensure_running()
    if real_node:
        realnode.ensure_running(cluster)
        registry.ensure_running(cluster.state_dir, cluster.layout.log(registry.NAME))
    return cluster


__all__ = [
    "Cluster",
    "ComponentError",
    "current",
    "ensure_running",
    "service_account_kubeconfig",
    "status",
    "stop",
]
