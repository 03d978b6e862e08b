"""The fleet gauges as Prometheus reads them: counted at scrape time, and zero on a replica that does not
lead (a standby, or one that led before and kept what it saw)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from keycloak_operator.kernel import names
from keycloak_operator.shell import metrics
from keycloak_operator.shell.leadership import leadership


def scrape(fleet: metrics.Fleet) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    registry = CollectorRegistry()
    registry.register(metrics._FleetCollector(fleet))
    text = generate_latest(registry).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


READY = {"type": "Ready", "status": "True", "reason": "Ready", "message": "", "lastTransitionTime": "t"}


@pytest.fixture
def fleet() -> metrics.Fleet:
    f = metrics.Fleet()
    f.keycloak_seen(("a", "kc"), {"phase": "Pending"})
    f.keycloak_seen(("b", "kc"), {"phase": "Running", "conditions": [READY]})
    f.replicated_seen(names.REALM_KIND, "a", "r", "Error")
    f.replicated_seen(names.CLIENT_KIND, "a", "c", "Ready")
    return f


@pytest.fixture
def standby() -> Iterator[None]:
    """This replica announced itself in the peering object, and a live peer outranks it."""
    saved = leadership.peering, leadership.identity, leadership.priority, leadership.namespaces
    now = datetime.now(UTC).isoformat()
    leadership.configure("kcop", "me", 1, None)
    leadership._status[None] = {
        "me": {"priority": 1, "lastseen": now, "lifetime": 60},
        "peer": {"priority": 2, "lastseen": now, "lifetime": 60},
    }
    yield
    leadership._status.pop(None, None)
    leadership.configure(*saved)


def test_the_leader_counts_what_it_saw(fleet: metrics.Fleet) -> None:
    got = scrape(fleet)
    assert got[("kcop_leading", ())] == 1
    assert got[("kcop_keycloaks_not_ready", ())] == 1
    assert got[("kcop_keycloaks", (("phase", "Running"),))] == 1
    assert got[("kcop_replicated_resources", (("kind", names.REALM_KIND), ("phase", "Error")))] == 1
    assert got[("kcop_replicated_resources", (("kind", names.CLIENT_KIND), ("phase", "Ready")))] == 1


def test_what_is_deleted_is_no_longer_counted(fleet: metrics.Fleet) -> None:
    fleet.keycloak_gone(("a", "kc"))
    fleet.replicated_gone(names.REALM_KIND, "a", "r")
    got = scrape(fleet)
    assert got[("kcop_keycloaks_not_ready", ())] == 0
    assert got[("kcop_replicated_resources", (("kind", names.REALM_KIND), ("phase", "Error")))] == 0


@pytest.mark.usefixtures("standby")
def test_a_standby_reports_zeros_whatever_it_saw_before(fleet: metrics.Fleet) -> None:
    got = scrape(fleet)
    assert got[("kcop_leading", ())] == 0
    assert got[("kcop_keycloaks_not_ready", ())] == 0
    assert got[("kcop_keycloaks", (("phase", "Running"),))] == 0
    assert got[("kcop_replicated_resources", (("kind", names.REALM_KIND), ("phase", "Error")))] == 0


def test_replication_rounds_have_buckets_up_to_minutes() -> None:
    assert (
        max(metrics.PASS_BUCKETS) >= 600 and 60 in metrics.PASS_BUCKETS and min(metrics.PASS_BUCKETS) <= 0.01
    )


def test_a_round_drops_what_its_server_no_longer_holds_and_leaves_other_servers_alone() -> None:
    """A realm deleted while this replica stood by sends it no DELETED: the next round of its server does not
    see it, and it stops being counted; another server's entries stay."""
    f = metrics.Fleet()
    f.replicated_seen(names.REALM_KIND, "a", "gone", "Error", "http://one")
    f.replicated_seen(names.REALM_KIND, "a", "kept", "Ready", "http://one")
    f.replicated_seen(names.REALM_KIND, "b", "other", "Error", "http://two")
    f.replicated_round("http://one", {(names.REALM_KIND, "a", "kept")})
    assert set(f.replicated) == {(names.REALM_KIND, "a", "kept"), (names.REALM_KIND, "b", "other")}
    f.replicated_gone(names.REALM_KIND, "b", "other")
    assert set(f.replicated_server) == {(names.REALM_KIND, "a", "kept")}
