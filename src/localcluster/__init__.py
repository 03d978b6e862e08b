"""A real Kubernetes control plane on loopback for tests and the demo (kwok plays the kubelets)."""

from localcluster.cluster import Cluster
from localcluster.control_plane import ComponentError, current, ensure_running, status, stop
from localcluster.service_account import service_account_kubeconfig

__all__ = [
    "Cluster",
    "ComponentError",
    "current",
    "ensure_running",
    "service_account_kubeconfig",
    "status",
    "stop",
]
