"""Removing what a real node wrote into the machine's iptables and that its own cleanup leaves behind.

`kube-proxy --cleanup` removes kube-proxy's chains but not KUBE-FIREWALL, which it creates on the kubelet's
behalf (jumped to from INPUT and OUTPUT), nor the kubelet's canaries if any. The CNI bridge plugin's per-pod
masquerade rules go only on CNI DEL, which never comes for pods whose kubelet died first; they are found by
the network's name in their comment. One real node per machine: these chain names are not per cluster.
"""

from __future__ import annotations

import shlex
import subprocess

LEFTOVER_CHAINS = {
    "filter": ("KUBE-FIREWALL", "KUBE-KUBELET-CANARY"),
    "nat": ("KUBE-KUBELET-CANARY",),
    "mangle": ("KUBE-KUBELET-CANARY", "KUBE-IPTABLES-HINT"),
}


def parse(listing: str) -> list[list[str]]:
    """`iptables -S` output as argument lists (quoted comments kept whole)."""
    return [shlex.split(line) for line in listing.splitlines() if line.strip()]


def jumps_into(rules: list[list[str]], chains: tuple[str, ...]) -> list[list[str]]:
    """Rules of other chains that jump into one of `chains` (rules inside them go with a flush)."""
    return [
        r
        for r in rules
        if r[:1] == ["-A"] and r[1] not in chains and "-j" in r and r[r.index("-j") + 1] in chains
    ]


def cni_tag(network: str) -> str:
    """How CNI plugins mark a rule of one network in its comment: `name: "<network>" id: "<container>"`."""
    return f'name: "{network}" '


def tagged(rules: list[list[str]], network: str) -> tuple[list[list[str]], set[str]]:
    """(the network's rules, its per-pod chains: CNI-<hash>, not shared ones like CNI-HOSTPORT-*)."""
    tag = cni_tag(network)
    ours = [r for r in rules if r[:1] == ["-A"] and any(tag in part for part in r)]
    chains = {
        r[1] for r in ours if r[1].startswith("CNI-") and all(c in "0123456789abcdef" for c in r[1][4:])
    }
    return ours, chains


def _listing(table: str) -> list[list[str]]:
    proc = subprocess.run(["iptables", "-t", table, "-S"], capture_output=True, text=True, check=False)
    return parse(proc.stdout) if proc.returncode == 0 else []


def _run(table: str, *args: str) -> None:
    subprocess.run(["iptables", "-t", table, *args], capture_output=True, check=False)


def remove_leftover_chains() -> None:
    for table, chains in LEFTOVER_CHAINS.items():
        for rule in jumps_into(_listing(table), chains):
            _run(table, "-D", *rule[1:])
        for chain in chains:
            _run(table, "-F", chain)
            _run(table, "-X", chain)


def remove_cni_rules(network: str) -> None:
    for table in ("nat", "filter"):
        rules, chains = tagged(_listing(table), network)
        for rule in rules:
            _run(table, "-D", *rule[1:])
        for chain in chains:
            _run(table, "-F", chain)
            _run(table, "-X", chain)
