"""`spec.cacheIsolation`: the name of a Keycloak's JGroups cache cluster and how its pods find each other."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from keycloak_operator.models.base import CrdModel


class CacheIsolation(CrdModel):
    """How the JGroups cache cluster name is chosen, and how pods find the others of their cluster.

    Priority: clusterName > autoRevision > autoSuffix > none.
    """

    # No default value: a non-null default would enter every spec's hash, and an operator upgrade would then
    # start a new version for every Keycloak (and push the last good one out of lastVersion). Read through
    # `stack_in_use`.
    stack: Literal["kubernetes", "jdbc-ping"] | None = Field(
        default=None,
        description="How pods find each other; unset is `kubernetes`. `kubernetes`: DNS through a discovery "
        "Service that lists only the pods of the pod's own cache cluster, which keeps blue and green apart "
        "on every Keycloak version; Keycloak deprecates it from 26.4. `jdbc-ping` (Keycloak's own default): "
        "through a table in the database, by cluster name, which Keycloak honours only from 26.7: before "
        "it every node on one database joins one cluster, so blue and green stay apart only on separate "
        "databases (a database copy). From 26.8, jdbc-ping nodes report unhealthy when two cluster names "
        "use one database, so a blue-green upgrade on one database must keep blue's name or is refused. "
        "Changing the stack recreates the pods (docs/adr/0021).",
    )

    @property
    def stack_in_use(self) -> Literal["kubernetes", "jdbc-ping"]:
        return self.stack or "kubernetes"

    cluster_name: str | None = Field(
        default=None,
        max_length=63,
        pattern=r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$",
        description="Explicit cache cluster name; wins over everything. "
        "Use it for moving or digest-only tags.",
    )
    auto_revision: bool = Field(
        default=False,
        description="Recommended: `<name>-v<major>` from a SemVer image tag, stable across patch and minor "
        "releases. A non-SemVer tag turns isolation off with a Warning.",
    )
    auto_suffix: bool = Field(
        default=False,
        description="Legacy: the whole image tag as suffix; every patch upgrade splits the cluster.",
    )
