"""The Keycloak's ServiceMonitor: a pure rendering of `spec.monitoring.serviceMonitor`, and what status says
about it.

Whether the cluster serves the ServiceMonitor CRD is a fact the shell observes (API discovery) and passes
in: asked for where it is not served, no ServiceMonitor is rendered, the Monitored condition and a Warning
event say so, and nothing else waits for it (it is not a problem that blocks rolling pods).
"""

from __future__ import annotations

from typing import Any

from keycloak_operator.core import children
from keycloak_operator.core.common import conditions
from keycloak_operator.kernel import names
from keycloak_operator.models.keycloak import KeycloakSpec

GROUP = "monitoring.coreos.com"
VERSION = "v1"
PLURAL = "servicemonitors"
KIND = "ServiceMonitor"
METRICS_PATH = "/metrics"
UNAVAILABLE = "ServiceMonitorUnavailable"


# Asked for in the spec, whether or not the cluster can have one; the public Service then has the
# management port (children.public_service).
wanted = children.service_monitor_wanted


def service_monitor(spec: KeycloakSpec, owner: children.Owner, *, crd_served: bool) -> dict[str, Any] | None:
    """The ServiceMonitor; None when not asked for or the cluster does not serve the kind."""
    if not wanted(spec) or not crd_served or spec.monitoring is None:
        return None
    monitor = spec.monitoring.service_monitor
    assert monitor is not None
    endpoint: dict[str, Any] = {
        "port": children.MANAGEMENT_PORT_NAME,
        "path": METRICS_PATH,
        "interval": monitor.interval,
        "scheme": "http",
    }
    if spec.tls is not None:
        # The management interface serves HTTPS with the same certificate, which names the public Service
        # (docs/guide/keycloak.md, TLS; the cluster domain is the default one, as in the discovery names).
        endpoint["scheme"] = "https"
        endpoint["tlsConfig"] = {
            "ca": {"secret": {"name": spec.tls.secret, "key": "ca.crt"}},
            "serverName": names.discovery_dns(names.public_service(owner.name), owner.namespace),
        }
    labels = {**(monitor.labels or {}), **names.component_labels(owner.name, names.COMPONENT_METRICS)}
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": KIND,
        "metadata": {
            "name": names.service_monitor(owner.name),
            "namespace": owner.namespace,
            "labels": dict(sorted(labels.items())),
            "ownerReferences": [owner.reference()],
        },
        "spec": {
            # The public Service of this Keycloak only: it selects the serving pods, green's from cutover on.
            "selector": {"matchLabels": names.component_labels(owner.name, names.COMPONENT_HTTP)},
            "endpoints": [endpoint],
        },
    }


def condition(spec: KeycloakSpec, keycloak: str, *, crd_served: bool) -> conditions.Wanted | None:
    """The Monitored condition, present only while a ServiceMonitor is asked for."""
    if not wanted(spec):
        return None
    if not crd_served:
        return conditions.Wanted(
            conditions.MONITORED,
            "False",
            "ServiceMonitorCRDMissing",
            "spec.monitoring.serviceMonitor.enabled is true, but the cluster does not serve "
            f"{KIND}s ({GROUP}/{VERSION}: the Prometheus Operator's CRD); none is made until it does. "
            f"Metrics stay available on port {children.MANAGEMENT_PORT} at {METRICS_PATH}",
        )
    return conditions.Wanted(
        conditions.MONITORED, "True", "ServiceMonitorConfigured", f"{KIND} {names.service_monitor(keycloak)}"
    )
