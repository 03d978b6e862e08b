"""Where the real node's files live and what its configuration files say: pure, so it is unit-tested.

The real node is one machine's kubelet + containerd + runc + CNI (bridge, host-local) + kube-proxy, beside
kwok's fake nodes. Every path containerd, runc, CNI and the kubelet would default to a machine-wide location
(/var/lib/containerd, /run/containerd/runc, /var/lib/kubelet, /var/lib/cni, /var/log/pods) is moved under the
cluster's state dir, so a real node belongs to exactly one local cluster and is removed with it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

NODE_NAME = "kcop-real-node"
# Pods land on the real node only when they ask for it: the taint keeps everything else on kwok's nodes,
# the label is what they select.
LABEL_KEY = "kcop.dev/real-node"
LABEL_VALUE = "true"
TAINT = f"{LABEL_KEY}={LABEL_VALUE}:NoSchedule"
CLUSTER_DOMAIN = "cluster.local"
DNS_SERVICE_IP = "10.96.0.10"  # in layout.SERVICE_CIDR; kubelet writes it into every pod's resolv.conf
CNI_BIN_DIR = Path("/usr/lib/cni")  # Debian's containernetworking-plugins

PAUSE_IMAGE = "kcop.local/pause:1"
NETCHECK_IMAGE = "kcop.local/netcheck:1"


def coredns_image(version: str) -> str:
    return f"kcop.local/coredns:{version}"


@dataclass(frozen=True)
class NodeLayout:
    """The real node's part of a cluster's state dir."""

    root: Path  # <cluster state dir>/realnode

    @property
    def state_file(self) -> Path:
        return self.root / "realnode.json"

    @property
    def pki(self) -> Path:
        return self.root / "pki"

    @property
    def containerd_config(self) -> Path:
        return self.root / "containerd.toml"

    @property
    def containerd_root(self) -> Path:
        return self.root / "containerd" / "root"

    @property
    def containerd_state(self) -> Path:
        return self.root / "containerd" / "state"

    @property
    def containerd_socket(self) -> Path:
        return self.root / "containerd" / "containerd.sock"

    @property
    def runc_root(self) -> Path:
        return self.containerd_state / "runc"

    @property
    def cni_conf_dir(self) -> Path:
        return self.root / "cni" / "net.d"

    @property
    def cni_ipam_dir(self) -> Path:
        return self.root / "cni" / "ipam"

    @property
    def kubelet_root(self) -> Path:
        return self.root / "kubelet"

    @property
    def kubelet_config(self) -> Path:
        return self.root / "kubelet.yaml"

    @property
    def kube_proxy_config(self) -> Path:
        return self.root / "kube-proxy.yaml"

    @property
    def pod_logs(self) -> Path:
        return self.root / "pod-logs"

    def kubeconfig(self, name: str) -> Path:
        return self.root / "kubeconfigs" / f"{name}.kubeconfig"


REAL_POD_RANGE = "10.250.0.0/16"  # every real node's /24 is in here (Network.for_state_dir)


@dataclass(frozen=True)
class Network:
    """The real node's pod network: a Linux bridge of its own and a /24 that kwok's pod CIDR never uses.

    Both are derived from the state dir, so a second local cluster on the same machine (a private one next
    to `make cluster`'s) would pick different ones rather than share a bridge.
    """

    bridge: str
    subnet: str
    gateway: str

    @staticmethod
    def for_state_dir(state_dir: Path) -> Network:
        n = _slot(state_dir)
        # 10.250.0.0/16 is outside the service CIDR (10.96.0.0/16) and kwok's pod CIDR (10.244.0.0/16).
        return Network(bridge=f"kcop{n}", subnet=f"10.250.{n}.0/24", gateway=f"10.250.{n}.1")


def _slot(state_dir: Path) -> int:
    """A small number per state dir: what keeps two clusters' bridges, subnets and cgroups apart."""
    return int(hashlib.sha256(str(state_dir.resolve()).encode()).hexdigest()[:4], 16) % 250


def cgroup_root(state_dir: Path) -> str:
    """The node's own cgroup (see node_cgroups), a name directly under each hierarchy's root."""
    return f"kcop-node-{_slot(state_dir)}"


def containerd_toml(layout: NodeLayout, sandbox_image: str) -> str:
    """containerd 1.6's config (version 2) for the CRI plugin the kubelet talks to."""
    c = layout
    return f"""version = 2
root = "{c.containerd_root}"
state = "{c.containerd_state}"
# Snapshotters this machine cannot use only add errors to the log.
disabled_plugins = [
  "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.zfs",
]

[grpc]
  address = "{c.containerd_socket}"

[plugins."io.containerd.internal.v1.opt"]
  path = "{c.root / "containerd" / "opt"}"

[plugins."io.containerd.grpc.v1.cri"]
  # Built here and imported before the kubelet starts: nothing can be pulled on this machine.
  sandbox_image = "{sandbox_image}"
  # The VM grants no CAP_SYS_RESOURCE; without this every sandbox fails with
  # "runc create failed: ... can't get final child's PID from pipe: EOF".
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        # cgroup v1 with the kubelet's cgroupfs driver; runc's state out of the machine-wide /run.
        SystemdCgroup = false
        Root = "{c.runc_root}"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{CNI_BIN_DIR}"
    conf_dir = "{c.cni_conf_dir}"
    max_conf_num = 1
"""


def cni_conflist(layout: NodeLayout, net: Network) -> dict[str, Any]:
    return {
        "cniVersion": "1.0.0",
        "name": net.bridge,
        "plugins": [
            {
                "type": "bridge",
                "bridge": net.bridge,
                "isGateway": True,
                # Pods reach beyond the node (the upstream resolver CoreDNS forwards to) from the node's IP.
                "ipMasq": True,
                # A pod reaching its own Service's ClusterIP is sent back out of the port it came in on.
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": net.subnet, "gateway": net.gateway}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": str(layout.cni_ipam_dir),
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }


@dataclass(frozen=True)
class KubeletPorts:
    api: int  # the kubelet API the API server proxies logs and exec to, on the node IP
    healthz: int  # loopback only


def kubelet_config(
    layout: NodeLayout,
    ports: KubeletPorts,
    node_ip: str,
    ca: Path,
    serving: tuple[Path, Path],
    cgroup_root: str,
) -> str:
    config = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "cgroupDriver": "cgroupfs",  # cgroups are v1 here and nothing runs systemd
        "cgroupRoot": f"/{cgroup_root}",  # pods under /<root>/kubepods, not the machine-wide /kubepods
        "containerRuntimeEndpoint": f"unix://{layout.containerd_socket}",
        "address": node_ip,
        # Its own port, recorded in the Node's status for the API server, rather than 10250 for every node.
        "port": ports.api,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": ports.healthz,
        "tlsCertFile": str(serving[0]),
        "tlsPrivateKeyFile": str(serving[1]),
        # Only the API server (its kubelet-client certificate, signed by the cluster CA) and callers the API
        # server authorizes may use the kubelet API.
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(ca)},
        },
        "authorization": {"mode": "Webhook"},
        "clusterDNS": [DNS_SERVICE_IP],
        "clusterDomain": CLUSTER_DOMAIN,
        "podLogsDir": str(layout.pod_logs),
        "registerWithTaints": [{"key": LABEL_KEY, "value": LABEL_VALUE, "effect": "NoSchedule"}],
        "failSwapOn": False,
        # No KUBE-FIREWALL / canary chains in the machine's iptables: they outlive the kubelet, and the
        # localnet DROP rule they carry guards NodePorts on loopback, which kube-proxy is told not to open.
        "makeIPTablesUtilChains": False,
        # Images are built here and cannot be pulled again: never garbage-collect them, never evict for
        # disk pressure of a shared development machine.
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%"},
        "serializeImagePulls": False,
        "maxPods": 110,
        "staticPodPath": "",
        "resolvConf": "/etc/resolv.conf",
    }
    return yaml.safe_dump(config, sort_keys=False)


@dataclass(frozen=True)
class ProxyPorts:
    healthz: int
    metrics: int


def kube_proxy_config(layout: NodeLayout, ports: ProxyPorts, net: Network) -> str:
    config = {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "mode": "iptables",
        "clientConnection": {"kubeconfig": str(layout.kubeconfig("kube-proxy"))},
        "hostnameOverride": NODE_NAME,
        "healthzBindAddress": f"127.0.0.1:{ports.healthz}",
        "metricsBindAddress": f"127.0.0.1:{ports.metrics}",
        # Traffic to a ClusterIP from outside the pod subnet (the host, tests, a load generator) is
        # masqueraded, so replies come back through the node.
        "clusterCIDR": net.subnet,
        # NodePorts on the node IP only, and no route_localnet sysctl flipped for NodePorts on loopback.
        "nodePortAddresses": ["primary"],
        "iptables": {"localhostNodePorts": False},
        # Leave the machine's conntrack sysctls alone: this is a shared development VM, not a node.
        "conntrack": {
            "maxPerCore": 0,
            "min": 0,
            "tcpEstablishedTimeout": "0s",
            "tcpCloseWaitTimeout": "0s",
        },
    }
    return yaml.safe_dump(config, sort_keys=False)


def kubelet_args(kubelet: Path, layout: NodeLayout, node_ip: str) -> list[str]:
    return [
        str(kubelet),
        f"--config={layout.kubelet_config}",
        f"--kubeconfig={layout.kubeconfig('kubelet')}",
        f"--root-dir={layout.kubelet_root}",
        f"--cert-dir={layout.kubelet_root / 'pki'}",
        f"--hostname-override={NODE_NAME}",
        f"--node-ip={node_ip}",
        f"--node-labels={LABEL_KEY}={LABEL_VALUE}",
        "--v=1",
    ]


def containerd_args(layout: NodeLayout) -> list[str]:
    return ["/usr/bin/containerd", f"--config={layout.containerd_config}"]


def kube_proxy_args(kube_proxy: Path, layout: NodeLayout) -> list[str]:
    return [str(kube_proxy), f"--config={layout.kube_proxy_config}", "--v=1"]


def cni_conflist_json(layout: NodeLayout, net: Network) -> str:
    return json.dumps(cni_conflist(layout, net), indent=2)
