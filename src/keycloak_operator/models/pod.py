"""Settings of the Keycloak pods themselves: security context (`spec.podSecurityContext`,
`spec.securityContext`) and graceful shutdown (`spec.shutdown`). All are part of the pod template, so a
change rolls the pods and is a new version; unset, the operator's safe defaults apply."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from keycloak_operator.models.base import CrdModel

ID_MAX = 2**31 - 1
GROUPS_MAX = 32
# The preStop delay is bounded: a pod being deleted waits for it, and a drain waits for the pod.
SHUTDOWN_DELAY_MAX = 300

GroupId = Annotated[int, Field(ge=0, le=ID_MAX)]


class PodSecurityContextSpec(CrdModel):
    """Pod-level security settings laid over the defaults (runAsNonRoot, seccompProfile RuntimeDefault, which
    stay). Unset fields keep the image's user: the official image runs as uid 1000, gid 0."""

    run_as_user: int | None = Field(
        default=None, ge=1, le=ID_MAX, description="User id of the container processes (never root)."
    )
    run_as_group: int | None = Field(
        default=None, ge=0, le=ID_MAX, description="Primary group id (the official image uses 0)."
    )
    fs_group: int | None = Field(
        default=None, ge=0, le=ID_MAX, description="Group that owns the pod's volumes (fsGroup)."
    )
    fs_group_change_policy: Literal["OnRootMismatch", "Always"] | None = Field(
        default=None, description="When volume ownership is changed to fsGroup."
    )
    supplemental_groups: list[GroupId] | None = Field(
        default=None, max_length=GROUPS_MAX, description="More group ids for the processes."
    )


class ContainerSecurityContextSpec(CrdModel):
    """Container-level settings laid over the defaults (allowPrivilegeEscalation false, every capability
    dropped, which stay)."""

    read_only_root_filesystem: bool = Field(
        default=False,
        description="Mount the image read-only, with empty writable directories at /tmp and "
        "/opt/keycloak/data. Needs an image already built (`kc.sh build`) with the build options the "
        "operator sets (database postgres, health and metrics on, your features): otherwise Keycloak "
        "rebuilds itself into /opt/keycloak/lib at start, and cannot.",
    )


class ShutdownSpec(CrdModel):
    """How a pod being stopped (a roll, a scale-down, a drain, blue's teardown) goes away."""

    delay_seconds: int = Field(
        default=5,
        ge=0,
        le=SHUTDOWN_DELAY_MAX,
        description="Seconds a stopping pod keeps serving after it has left the Service's endpoints (a "
        "preStop sleep), so kube-proxy on every node and the ingress controllers stop sending it requests "
        "before Keycloak shuts down. Must cover your cluster's endpoint propagation. The grace period is "
        "this plus 25 s for Keycloak's own shutdown. 0: no delay.",
    )


# Bounds on what a probe override may ask: a period or timeout over five minutes hides a dead pod for longer
# than any rollout waits, and a threshold over 86,400 (a day of probes every second) is a pod that never says
# it failed. Each is bounded alone: a long period times a high threshold can still ask for more than a day.
PROBE_SECONDS_MAX = 300
PROBE_FAILURES_MAX = 86400


class ProbeSettings(CrdModel):
    """One probe's timing; an unset field keeps the operator's default for that probe."""

    period_seconds: int | None = Field(
        default=None, ge=1, le=PROBE_SECONDS_MAX, description="Seconds between two probes."
    )
    failure_threshold: int | None = Field(
        default=None,
        ge=1,
        le=PROBE_FAILURES_MAX,
        description="Failures in a row before the kubelet acts (periodSeconds x failureThreshold is the "
        "time allowed).",
    )
    timeout_seconds: int | None = Field(
        default=None,
        ge=1,
        le=PROBE_SECONDS_MAX,
        description="Seconds an answer may take; a slower one counts as a failure.",
    )


class ProbesSpec(CrdModel):
    """The kubelet's probes of Keycloak's management port (/health/started, /health/ready, /health/live)."""

    startup: ProbeSettings | None = Field(
        default=None,
        description="Until /health/started answers: a failure budget exhausted restarts the container. "
        "Default every 1 s, 600 failures (10 minutes for the build `kc.sh start` does and, before Keycloak "
        "26.7, the schema migration).",
    )
    readiness: ProbeSettings | None = Field(
        default=None,
        description="Whether the pod receives traffic (and counts as Ready for upgrades). Default every "
        "1 s, so a pod is Ready within a second of Keycloak being ready; 30 failures (30 s) before it "
        "leaves the Service.",
    )
    liveness: ProbeSettings | None = Field(
        default=None,
        description="After startup: a failure budget exhausted restarts the container. Default every "
        "10 s, 3 failures.",
    )
