"""The real node's configuration: everything machine-wide moved under the cluster's state dir."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import yaml

from localcluster import coredns, nodes
from localcluster.layout import POD_CIDR, SERVICE_CIDR
from localcluster.node_config import (
    DNS_SERVICE_IP,
    LABEL_KEY,
    KubeletPorts,
    Network,
    NodeLayout,
    ProxyPorts,
    cni_conflist,
    containerd_toml,
    kube_proxy_config,
    kubelet_config,
)

LAYOUT = NodeLayout(Path("/state/realnode"))


def test_containerd_keeps_every_path_under_the_state_dir_and_restricts_oom_score() -> None:
    config = tomllib.loads(containerd_toml(LAYOUT, "kcop.local/pause:1"))
    assert config["root"].startswith("/state/realnode/")
    assert config["state"].startswith("/state/realnode/")
    assert config["grpc"]["address"].startswith("/state/realnode/")
    cri = config["plugins"]["io.containerd.grpc.v1.cri"]
    assert cri["restrict_oom_score_adj"] is True
    assert cri["sandbox_image"] == "kcop.local/pause:1"
    options = cri["containerd"]["runtimes"]["runc"]["options"]
    assert options["SystemdCgroup"] is False
    assert options["Root"].startswith("/state/realnode/")
    assert cri["cni"]["conf_dir"].startswith("/state/realnode/")


def test_network_is_per_state_dir_and_clear_of_the_other_cidrs() -> None:
    one, two = Network.for_state_dir(Path("/a")), Network.for_state_dir(Path("/b"))
    assert one == Network.for_state_dir(Path("/a"))
    assert len(one.bridge) <= 15  # Linux interface names
    for net in (one, two):
        assert net.subnet.startswith("10.250.")
        assert not net.subnet.startswith(POD_CIDR.split(".0.0/")[0] + ".")
        assert not net.subnet.startswith(SERVICE_CIDR.split(".0.0/")[0] + ".")


def test_cni_uses_its_own_bridge_and_ipam_dir() -> None:
    net = Network("kcop7", "10.250.7.0/24", "10.250.7.1")
    bridge = cni_conflist(LAYOUT, net)["plugins"][0]
    assert (bridge["type"], bridge["bridge"]) == ("bridge", "kcop7")
    assert bridge["ipam"]["dataDir"].startswith("/state/realnode/")
    assert bridge["ipam"]["ranges"] == [[{"subnet": "10.250.7.0/24", "gateway": "10.250.7.1"}]]


def test_kubelet_is_tainted_authenticated_and_points_at_cluster_dns() -> None:
    serving = (Path("/s.crt"), Path("/s.key"))
    config = yaml.safe_load(
        kubelet_config(LAYOUT, KubeletPorts(1, 2), "192.0.2.2", Path("/ca.crt"), serving, "kcop-node-7")
    )
    assert config["cgroupDriver"] == "cgroupfs"
    assert config["cgroupRoot"] == "/kcop-node-7"
    assert config["clusterDNS"] == [DNS_SERVICE_IP]
    assert config["registerWithTaints"] == [{"key": LABEL_KEY, "value": "true", "effect": "NoSchedule"}]
    assert config["authentication"]["anonymous"]["enabled"] is False
    assert config["authorization"]["mode"] == "Webhook"
    assert (config["address"], config["port"], config["readOnlyPort"]) == ("192.0.2.2", 1, 0)


def test_kube_proxy_leaves_the_machines_conntrack_settings_alone() -> None:
    net = Network("kcop7", "10.250.7.0/24", "10.250.7.1")
    config = yaml.safe_load(kube_proxy_config(LAYOUT, ProxyPorts(1, 2), net))
    assert config["mode"] == "iptables"
    assert config["conntrack"]["maxPerCore"] == 0
    assert config["clusterCIDR"] == net.subnet


def test_coredns_runs_only_on_the_real_node_behind_the_fixed_cluster_ip() -> None:
    items = json.loads(coredns.manifest_list("img:1", "192.0.2.2", "/dir", coredns.DnsPorts(3, 4)))["items"]
    service = next(i for i in items if i["kind"] == "Service")
    assert service["spec"]["clusterIP"] == DNS_SERVICE_IP
    deploy = next(i for i in items if i["kind"] == "Deployment")
    pod = deploy["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {LABEL_KEY: "true"}
    assert pod["tolerations"][0]["key"] == LABEL_KEY
    assert pod["hostNetwork"] is True
    corefile = next(i for i in items if i["kind"] == "ConfigMap")["data"]["Corefile"]
    assert "bind 192.0.2.2" in corefile
    assert "ready 192.0.2.2:4" in corefile


def test_kwok_selects_only_its_own_nodes() -> None:
    labels = nodes.manifest(0)["metadata"]["labels"]  # type: ignore[index]
    key, value = nodes.KWOK_SELECTOR.split("=")
    assert labels[key] == value
    assert LABEL_KEY not in labels
