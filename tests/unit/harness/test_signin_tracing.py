"""The sign-in load generator's tracing helpers: who answered a connection (conntrack) and which JGroups
view a Keycloak log reports."""

from __future__ import annotations

from localcluster import routes
from tests.integration.support import jgroups

LISTING = """\
tcp      6 117 TIME_WAIT src=192.0.2.2 dst=10.96.7.9 sport=40001 dport=8080 src=10.250.241.7 dst=192.0.2.2 \
sport=8080 dport=40001 [ASSURED] mark=0 use=1
tcp      6 9 CLOSE src=192.0.2.2 dst=10.96.7.9 sport=40002 dport=8080 src=10.96.7.9 dst=192.0.2.2 sport=8080 \
dport=40002 mark=0 use=1
conntrack v1.4.7 (conntrack-tools): 2 flow entries have been shown.
"""


def test_parse_reads_the_local_port_and_who_replied() -> None:
    assert routes.parse(LISTING) == [(40001, "10.250.241.7"), (40002, "10.96.7.9")]


def test_served_by_takes_the_first_entry_after_sending_and_falls_back_to_a_reused_entry() -> None:
    traced = routes.Routes("10.96.7.9", 8080)
    traced.seen = {
        (40001, "10.250.241.7"): 10.0,
        (40001, "10.250.241.8"): 200.0,
        (40003, "10.250.241.7"): 5.0,
    }
    assert traced.served_by(40001, 9.5) == "10.250.241.7"
    assert traced.served_by(40001, 150.0) == "10.250.241.8"
    # Port 40003 reused for the same pod: conntrack's old entry was taken over, nothing new was listed.
    assert traced.served_by(40003, 100.0) == "10.250.241.7"
    assert traced.served_by(40004, 1.0) == ""


def test_views_in_reads_every_view_with_its_members() -> None:
    log = (
        "INFO [org.infinispan.CLUSTER] ISPN000094: Received new cluster view for channel ISPN: "
        "[sso-keycloak-7d9-abcde-12345|0] (1) [sso-keycloak-7d9-abcde-12345]\n"
        "INFO [org.infinispan.CLUSTER] ISPN000094: Received new cluster view for channel sso-26.7.3: "
        "[sso-keycloak-7d9-abcde-12345|1] (2) [sso-keycloak-7d9-abcde-12345, sso-keycloak-7d9-fghij-6789]\n"
    )
    assert jgroups.views_in(log) == [
        ("ISPN", "sso-keycloak-7d9-abcde-12345|0", ("sso-keycloak-7d9-abcde-12345",)),
        (
            "sso-26.7.3",
            "sso-keycloak-7d9-abcde-12345|1",
            ("sso-keycloak-7d9-abcde-12345", "sso-keycloak-7d9-fghij-6789"),
        ),
    ]


OLD = "sso-keycloak-7b5-n2pc7-133(v=16.0.12)"
NEW_A = "sso-keycloak-54d-mg65h-77(v=16.0.14)"
NEW_B = "sso-keycloak-54d-rdkrn-56241(v=16.0.14)"
UNNAMED = "4dc7f170-2f8f-426b-acee-25e3a99d8d89(v=16.0.14)"
PODS = {"sso-keycloak-7b5-n2pc7": "", "sso-keycloak-54d-mg65h": "", "sso-keycloak-54d-rdkrn": ""}


def test_a_member_printed_as_a_uuid_is_named_from_another_pods_log_of_the_same_view() -> None:
    # Two pods joined at once: rdkrn had not learnt mg65h's logical name when view 5 arrived (seen on a real
    # 26.7.3 roll), the coordinator had.
    seen = {
        jgroups.View(
            "sso-keycloak-54d-rdkrn", "", "ISPN", (OLD, UNNAMED, NEW_B), "sso-keycloak-7b5-n2pc7-133|5"
        ),
        jgroups.View(
            "sso-keycloak-7b5-n2pc7", "", "ISPN", (OLD, NEW_A, NEW_B), "sso-keycloak-7b5-n2pc7-133|5"
        ),
        jgroups.View(
            "sso-keycloak-54d-mg65h", "", "ISPN", (OLD, NEW_A, NEW_B), "sso-keycloak-7b5-n2pc7-133|5"
        ),
    }
    assert {v.members for v in jgroups.named(seen)} == {(OLD, NEW_A, NEW_B)}
    jgroups.assert_apart(seen, dict.fromkeys(PODS, "blue"))


def test_a_uuid_no_log_names_stays_unknown_and_is_a_crossing() -> None:
    seen = {
        jgroups.View(
            "sso-keycloak-54d-rdkrn", "", "ISPN", (OLD, UNNAMED, NEW_B), "sso-keycloak-7b5-n2pc7-133|5"
        ),
        # Another view id does not name it: a different view may hold different members.
        jgroups.View(
            "sso-keycloak-7b5-n2pc7", "", "ISPN", (OLD, NEW_A, NEW_B), "sso-keycloak-7b5-n2pc7-133|6"
        ),
    }
    assert (OLD, UNNAMED, NEW_B) in {v.members for v in jgroups.named(seen)}
    watch = jgroups.ViewWatch(kubectl=None, namespace="t", instance="sso", seen=seen)  # type: ignore[arg-type]
    watch.cache_cluster_of.update(PODS)
    assert [c for c in watch.crossings() if UNNAMED in c.split(" saw ")[1].split(" (")[0]]


def test_pod_of_names_the_longest_pod_a_member_is_named_after() -> None:
    pods = {"sso-keycloak-7d9-abcde", "sso-keycloak-green-5f-xyz12", "sso-keycloak-7d9-abcde-x"}
    assert jgroups.pod_of("sso-keycloak-7d9-abcde-12345", pods) == "sso-keycloak-7d9-abcde"
    assert jgroups.pod_of("sso-keycloak-7d9-abcde-x-1", pods) == "sso-keycloak-7d9-abcde-x"
    assert jgroups.pod_of("someone-else-1", pods) is None
