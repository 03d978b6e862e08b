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
