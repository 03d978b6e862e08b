"""Which iptables rules a real node's teardown removes, from `iptables -S` listings."""

from __future__ import annotations

from localcluster import node_iptables

FILTER = """-P INPUT ACCEPT
-N KUBE-FIREWALL
-N OTHER
-A INPUT -j KUBE-FIREWALL
-A OUTPUT -j KUBE-FIREWALL
-A INPUT -s 10.0.0.0/8 -j OTHER
-A KUBE-FIREWALL ! -s 127.0.0.0/8 -d 127.0.0.0/8 -m comment --comment "block localnet" -j DROP
"""

NAT = r"""-N CNI-013a142a
-N CNI-HOSTPORT-DNAT
-N CNI-ffff00aa
-A POSTROUTING -s 10.250.1.11/32 -m comment --comment "name: \"kcop1\" id: \"5f4d\"" -j CNI-013a142a
-A POSTROUTING -s 10.250.2.11/32 -m comment --comment "name: \"kcop17\" id: \"77aa\"" -j CNI-ffff00aa
-A CNI-013a142a -d 10.250.1.0/24 -m comment --comment "name: \"kcop1\" id: \"5f4d\"" -j ACCEPT
-A CNI-HOSTPORT-DNAT -p tcp -m comment --comment "name: \"kcop1\" id: \"5f4d\"" -j DNAT --to 10.250.1.11:80
"""


def test_only_jumps_from_other_chains_into_the_leftovers_are_deleted() -> None:
    rules = node_iptables.parse(FILTER)
    jumps = node_iptables.jumps_into(rules, ("KUBE-FIREWALL",))
    assert jumps == [["-A", "INPUT", "-j", "KUBE-FIREWALL"], ["-A", "OUTPUT", "-j", "KUBE-FIREWALL"]]


def test_the_comment_stays_one_argument() -> None:
    rule = node_iptables.parse(FILTER)[-1]
    assert rule[rule.index("--comment") + 1] == "block localnet"


def test_cni_rules_of_one_network_only_and_its_own_per_pod_chains() -> None:
    rules, chains = node_iptables.tagged(node_iptables.parse(NAT), "kcop1")
    assert [r[1] for r in rules] == ["POSTROUTING", "CNI-013a142a", "CNI-HOSTPORT-DNAT"]
    # A network whose name starts the same (kcop17) is another one; the shared HOSTPORT chain stays.
    assert chains == {"CNI-013a142a"}
    assert all('name: "kcop1" ' in " ".join(r) for r in rules)
