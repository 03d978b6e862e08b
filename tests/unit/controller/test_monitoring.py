"""spec.monitoring.serviceMonitor: the ServiceMonitor, the port it needs, and what happens where the cluster
does not serve the kind (a condition and one Warning, nothing stalls)."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from keycloak_operator.core import children, monitoring, reconcile, versions
from keycloak_operator.core.common import conditions
from keycloak_operator.kernel import names
from keycloak_operator.models import monitoring as monitoring_model
from keycloak_operator.models.keycloak import KeycloakSpec
from tests.unit.builders import NOW, OWNER, observed, spec

ON: dict[str, Any] = {"serviceMonitor": {"enabled": True}}


def render(s: KeycloakSpec) -> dict[str, Any]:
    rendered = monitoring.service_monitor(s, OWNER, crd_served=True)
    assert rendered is not None
    return rendered


def test_off_unless_enabled_and_never_where_the_kind_is_not_served() -> None:
    assert monitoring.service_monitor(spec(), OWNER, crd_served=True) is None
    assert monitoring.service_monitor(spec(monitoring={}), OWNER, crd_served=True) is None
    assert monitoring.service_monitor(spec(monitoring={"serviceMonitor": {}}), OWNER, crd_served=True) is None
    assert monitoring.service_monitor(spec(monitoring=ON), OWNER, crd_served=False) is None


def test_it_scrapes_the_management_port_of_the_public_service() -> None:
    s = spec(monitoring=ON)
    sm = render(s)
    assert (sm["apiVersion"], sm["kind"]) == ("monitoring.coreos.com/v1", "ServiceMonitor")
    assert sm["metadata"]["name"] == names.service_monitor("kc")
    (endpoint,) = sm["spec"]["endpoints"]
    assert endpoint == {"port": "management", "path": "/metrics", "interval": "30s", "scheme": "http"}
    # It selects exactly this Keycloak's public Service, which has that port.
    service = children.public_service(OWNER, "a", s)
    assert sm["spec"]["selector"]["matchLabels"] == service["metadata"]["labels"]
    ports = {p["name"]: p["port"] for p in service["spec"]["ports"]}
    assert ports["management"] == children.MANAGEMENT_PORT == 9000
    other = children.public_service(children.Owner("kc2", "ns", "u2"), "a", s)
    assert not sm["spec"]["selector"]["matchLabels"].items() <= other["metadata"]["labels"].items()


def test_the_public_service_has_the_management_port_only_while_asked() -> None:
    for s in (spec(), spec(monitoring={"serviceMonitor": {"enabled": False}})):
        names_ = [p["name"] for p in children.public_service(OWNER, "a", s)["spec"]["ports"]]
        assert names_ == ["http"]
    with_tls = children.public_service(OWNER, "a", spec(monitoring=ON, tls={"secret": "t"}))
    assert [p["name"] for p in with_tls["spec"]["ports"]] == ["https", "management"]


def test_with_tls_it_scrapes_over_https_checking_the_certificate() -> None:
    (endpoint,) = render(spec(monitoring=ON, tls={"secret": "kc-tls"}))["spec"]["endpoints"]
    assert endpoint["scheme"] == "https"
    assert endpoint["tlsConfig"] == {
        "ca": {"secret": {"name": "kc-tls", "key": "ca.crt"}},
        "serverName": "kc-service.ns.svc.cluster.local",
    }
    assert "insecureSkipVerify" not in endpoint["tlsConfig"]


def test_interval_and_labels() -> None:
    sm = render(spec(monitoring={"serviceMonitor": {"enabled": True, "interval": "1m30s", "labels": LABELS}}))
    assert sm["spec"]["endpoints"][0]["interval"] == "1m30s"
    assert sm["metadata"]["labels"]["release"] == "prometheus"
    # The operator's own labels win: they are how it and its users find what it made.
    assert sm["metadata"]["labels"][names.LABEL_MANAGED_BY] == names.OPERATOR_NAME


LABELS = {"release": "prometheus", names.LABEL_MANAGED_BY: "someone"}


@pytest.mark.parametrize(
    "value",
    [
        {"interval": "30"},
        {"interval": "1s1m"},
        {"interval": ""},
        {"labels": {"not a key": "x"}},
        {"labels": {"release": "not a value"}},
    ],
)
def test_hostile_values_are_refused_naming_the_field(value: dict[str, Any]) -> None:
    with pytest.raises(ValidationError) as e:
        spec(monitoring={"serviceMonitor": value})
    assert "serviceMonitor" in str(e.value)


@given(st.text(st.sampled_from("0123456789hmsd"), min_size=1, max_size=12))
def test_intervals_are_prometheus_durations(interval: str) -> None:
    ok = len(interval) >= 2 and bool(re.fullmatch(monitoring_model.PROMETHEUS_DURATION, interval))
    try:
        spec(monitoring={"serviceMonitor": {"interval": interval}})
        accepted = True
    except ValidationError:
        accepted = False
    assert accepted == ok


def test_monitoring_is_not_part_of_the_version() -> None:
    assert versions.spec_hash(spec(monitoring=ON)) == versions.spec_hash(spec())


# --- the fact, the condition and the event -----------------------------------------------------------------


def decide(
    s: KeycloakSpec,
    *,
    served: bool,
    existing: dict[str, Any] | None = None,
    status: dict[str, Any] | None = None,
) -> reconcile.Decision:
    seen = observed(s, status=status, service_monitor=existing, service_monitor_served=served)
    return reconcile.decide(s, seen, now=NOW)


def kinds(objs: list[dict[str, Any]]) -> list[str]:
    return [o["kind"] for o in objs]


def monitored(decision: reconcile.Decision) -> dict[str, Any] | None:
    assert decision.status is not None
    return next((c for c in decision.status["conditions"] if c["type"] == conditions.MONITORED), None)


def test_asked_for_where_the_kind_is_served() -> None:
    decision = decide(spec(monitoring=ON), served=True)
    assert "ServiceMonitor" in kinds(decision.apply)
    condition = monitored(decision)
    assert condition is not None and condition["status"] == "True"
    assert not [e for e in decision.events if e.reason == monitoring.UNAVAILABLE]


def test_asked_for_where_it_is_not_served_a_warning_names_the_field_and_nothing_stalls() -> None:
    s = spec(monitoring=ON)
    decision = decide(s, served=False)
    assert "ServiceMonitor" not in kinds(decision.apply)
    condition = monitored(decision)
    assert condition is not None
    assert (condition["status"], condition["reason"]) == ("False", "ServiceMonitorCRDMissing")
    assert "spec.monitoring.serviceMonitor.enabled" in condition["message"]
    (warning,) = [e for e in decision.events if e.reason == monitoring.UNAVAILABLE]
    assert warning.type == "Warning" and "spec.monitoring.serviceMonitor" in warning.message
    # Not a problem that blocks the pods: the Deployment is still rolled out, the phase is not Degraded.
    assert "Deployment" in kinds(decision.apply)
    assert decision.status is not None and decision.status["phase"] != "Degraded"
    # The Warning is posted once, not on every pass.
    again = decide(s, served=False, status=decision.status)
    assert not [e for e in again.events if e.reason == monitoring.UNAVAILABLE]


def test_no_condition_unless_asked() -> None:
    assert monitored(decide(spec(), served=False)) is None


def stored(applied: dict[str, Any]) -> dict[str, Any]:
    obj = copy.deepcopy(applied)
    obj["metadata"]["uid"] = "sm-uid"
    return obj


def test_written_once_then_left_alone_and_deleted_when_disabled() -> None:
    s = spec(monitoring=ON)
    (written,) = [o for o in decide(s, served=True).apply if o["kind"] == "ServiceMonitor"]
    assert "ServiceMonitor" not in kinds(decide(s, served=True, existing=stored(written)).apply)
    off = spec(monitoring={"serviceMonitor": {"enabled": False}})
    assert decide(off, served=True, existing=stored(written)).delete == [stored(written)]
    # Gone from the spec entirely: the same; and a foreign one of the same name is left alone.
    assert decide(spec(), served=False, existing=stored(written)).delete == [stored(written)]
    foreign = stored(written)
    foreign["metadata"]["ownerReferences"] = [{**OWNER.reference(), "uid": "other"}]
    assert decide(spec(), served=True, existing=foreign).delete == []
