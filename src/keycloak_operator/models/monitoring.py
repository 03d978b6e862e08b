"""Metrics scraping: `spec.monitoring.serviceMonitor`, a Prometheus Operator ServiceMonitor for Keycloak's
metrics (management port 9000, `/metrics`), made only where the cluster serves that CRD."""

from __future__ import annotations

from pydantic import Field, field_validator

from keycloak_operator.models.base import CrdModel
from keycloak_operator.models.scheduling import LabelValue, check_label_keys

# The Prometheus Operator's duration: units in decreasing order, each at most once (`30s`, `1m30s`).
PROMETHEUS_DURATION = r"^(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?$"
LABELS_MAX = 16


class ServiceMonitorSpec(CrdModel):
    """A `monitoring.coreos.com/v1` ServiceMonitor `<name>-keycloak` over the public Service's `management`
    port, which the operator adds to that Service while this is enabled."""

    enabled: bool = Field(
        default=False,
        description="Make the ServiceMonitor. Where the cluster does not serve the ServiceMonitor CRD, none "
        "is made and the Monitored condition and a Warning event say so; nothing else waits for it.",
    )
    interval: str = Field(
        default="30s",
        min_length=2,
        max_length=32,
        pattern=PROMETHEUS_DURATION,
        description="Scrape interval (Prometheus duration: 30s, 1m, 1m30s).",
    )
    labels: dict[str, LabelValue] | None = Field(
        default=None,
        max_length=LABELS_MAX,
        description="Labels on the ServiceMonitor, for the Prometheus' serviceMonitorSelector "
        "(e.g. release: prometheus). The operator's own labels win over these.",
    )

    @field_validator("labels")
    @classmethod
    def _label_keys(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        return check_label_keys(value, "a label")


class MonitoringSpec(CrdModel):
    """How Prometheus finds Keycloak's metrics."""

    service_monitor: ServiceMonitorSpec | None = Field(
        default=None, description="A Prometheus Operator ServiceMonitor (off unless enabled)."
    )
