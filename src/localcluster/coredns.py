"""CoreDNS as the cluster's DNS: a one-replica Deployment on the real node behind the kube-dns Service.

It runs on the host network and reads the API through a kubeconfig on the node (its own client
certificate), so the cluster's DNS depends on neither the pod network nor the `kubernetes` Service, which
the pods it serves use to reach the API server. The kube-dns Service's endpoint is the node's IP. It binds
only the node IP, not every address of the machine.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from localcluster.node_config import CLUSTER_DOMAIN, DNS_SERVICE_IP, LABEL_KEY, LABEL_VALUE

NAMESPACE = "kube-system"
USER = "kcop:coredns"  # the CN of its client certificate, bound to the ClusterRole below
KUBECONFIG_IN_POD = "/etc/coredns-kubeconfig/kubeconfig"
APP_LABEL = {"k8s-app": "kube-dns"}


@dataclass(frozen=True)
class DnsPorts:
    health: int  # liveness (the `health` plugin)
    ready: int  # readiness (the `ready` plugin: every plugin, the kubernetes one included, has synced)


def corefile(node_ip: str, ports: DnsPorts) -> str:
    return f""".:53 {{
    bind {node_ip}
    errors
    health {node_ip}:{ports.health}
    ready {node_ip}:{ports.ready}
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{
        kubeconfig {KUBECONFIG_IN_POD}
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 5
    }}
    forward . /etc/resolv.conf
    cache 5
    loop
    loadbalance
}}
"""


def _rbac() -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": USER},
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["services", "pods", "namespaces"],
                    "verbs": ["list", "watch"],
                },
                {
                    "apiGroups": ["discovery.k8s.io"],
                    "resources": ["endpointslices"],
                    "verbs": ["list", "watch"],
                },
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": USER},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": USER},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": USER}],
        },
    ]


def service() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "kube-dns", "namespace": NAMESPACE, "labels": APP_LABEL},
        "spec": {
            "clusterIP": DNS_SERVICE_IP,
            "selector": APP_LABEL,
            "ports": [
                {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
                {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53},
            ],
        },
    }


def deployment(image: str, node_ip: str, kubeconfig_on_node: str, ports: DnsPorts) -> list[dict[str, Any]]:
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "coredns", "namespace": NAMESPACE},
        "data": {"Corefile": corefile(node_ip, ports)},
    }
    probe = {"httpGet": {"path": "/ready", "port": ports.ready}, "periodSeconds": 2, "failureThreshold": 3}
    pod_spec = {
        "hostNetwork": True,
        "dnsPolicy": "Default",  # the node's resolv.conf: CoreDNS must not ask itself
        "nodeSelector": {LABEL_KEY: LABEL_VALUE},
        "tolerations": [{"key": LABEL_KEY, "operator": "Exists", "effect": "NoSchedule"}],
        "priorityClassName": "system-cluster-critical",
        "automountServiceAccountToken": False,
        "containers": [
            {
                "name": "coredns",
                "image": image,
                "imagePullPolicy": "Never",  # built here; there is no registry to pull from
                "args": ["-conf", "/etc/coredns/Corefile"],
                "readinessProbe": probe,
                "livenessProbe": {
                    "httpGet": {"path": "/health", "port": ports.health},
                    "initialDelaySeconds": 10,
                    "periodSeconds": 10,
                },
                "volumeMounts": [
                    {"name": "config", "mountPath": "/etc/coredns", "readOnly": True},
                    {"name": "kubeconfig", "mountPath": "/etc/coredns-kubeconfig", "readOnly": True},
                ],
            }
        ],
        "volumes": [
            {"name": "config", "configMap": {"name": "coredns"}},
            {"name": "kubeconfig", "hostPath": {"path": kubeconfig_on_node, "type": "Directory"}},
        ],
    }
    deploy = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "coredns", "namespace": NAMESPACE, "labels": APP_LABEL},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": APP_LABEL},
            # Host network: a second pod cannot bind port 53 beside the first, so replace rather than surge.
            "strategy": {"type": "Recreate"},
            "template": {"metadata": {"labels": APP_LABEL}, "spec": pod_spec},
        },
    }
    return [*_rbac(), config_map, deploy]


def manifest_list(image: str, node_ip: str, kubeconfig_dir_on_node: str, ports: DnsPorts) -> str:
    items = [service(), *deployment(image, node_ip, kubeconfig_dir_on_node, ports)]
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items})
