"""The kubelet's probes of a Keycloak container: the operator's defaults, with spec.probes laid over them.

Pure. Why these defaults (measured on the real node, Keycloak 26.7.3; README "Ready time"):

- Keycloak 26.7 logs "started" and answers /health/started and /health/live when Quarkus is up, then
  bootstraps on a worker thread (schema migration on a new version, the JGroups channel, which waits 2 s for
  peers when it is the first member, the master realm). /health/ready reports "Keycloak Initialized" DOWN
  (SRHCK01001 in its log) until "Bootstrap completed". Its option `server-async-bootstrap` does this, on by
  default when health is (the operator turns health on): kept, since a long migration then runs under the
  readiness probe, which never restarts the container. So readiness waits for the bootstrap, and its period
  decides how long a pod that can serve stays out of the Service: every second. Each readiness probe costs
  one connection check against the pool when no connection is in use.
- The startup probe covers what comes before "started": `kc.sh start`'s build in its own JVM and, before
  26.7 (whose bootstrap runs before "started": 26.5.6 calls it from Quarkus' startup event), the
  migration. Every second too (the readiness probe only runs once it passed), with 600 failures: 10
  minutes, twice the budget it had every 5 s.
- Readiness keeps the 30 s a failing pod had before it left the Service (3 x 10 s): only the promptness
  changed. Liveness, whose failure restarts the container, keeps Kubernetes' defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from keycloak_operator.models.keycloak import KeycloakSpec
from keycloak_operator.models.pod import ProbeSettings

# The management interface's port: Keycloak serves /health there, never on the public port.
MANAGEMENT_PORT = 9000


@dataclass(frozen=True)
class Probe:
    field: str  # the container's field
    path: str  # Keycloak's health endpoint
    period: int
    failures: int
    timeout: int = 1  # the kubelet's own default, written so that an override back to it is seen


STARTUP = Probe("startupProbe", "/health/started", period=1, failures=600)
READINESS = Probe("readinessProbe", "/health/ready", period=1, failures=30)
LIVENESS = Probe("livenessProbe", "/health/live", period=10, failures=3)


def _render(default: Probe, override: ProbeSettings | None, tls: bool) -> dict[str, Any]:
    o = override or ProbeSettings()
    return {
        # With TLS on, Keycloak's management interface serves HTTPS with the same certificate.
        "httpGet": {"path": default.path, "port": MANAGEMENT_PORT, "scheme": "HTTPS" if tls else "HTTP"},
        "periodSeconds": o.period_seconds or default.period,
        "failureThreshold": o.failure_threshold or default.failures,
        "timeoutSeconds": o.timeout_seconds or default.timeout,
    }


def probes(spec: KeycloakSpec) -> dict[str, dict[str, Any]]:
    """The container's startupProbe, readinessProbe and livenessProbe."""
    tls = spec.tls is not None
    p = spec.probes
    return {
        STARTUP.field: _render(STARTUP, p.startup if p else None, tls),
        READINESS.field: _render(READINESS, p.readiness if p else None, tls),
        LIVENESS.field: _render(LIVENESS, p.liveness if p else None, tls),
    }
