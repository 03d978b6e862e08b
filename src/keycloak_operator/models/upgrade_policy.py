"""`spec.upgradePolicy`: how image changes roll out, and the database copy a blue-green upgrade may run on."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from keycloak_operator.kernel import patterns as pt
from keycloak_operator.models.base import CrdModel

DURATION_PATTERN = r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$"


class DatabaseCopy(CrdModel):
    """Blue-green across a schema migration: green gets a copy of blue's database (managed and external: a
    new database on the same server; cnpg: a new CloudNativePG Cluster recovered from the pre-upgrade
    Backup)."""

    image: pt.ImageReference | None = Field(
        default=None,
        description="Managed and external tiers (required there): image with PostgreSQL's client tools (sh, "
        "psql, pg_dump, pg_restore) of the server's major version or newer, e.g. "
        "docker.io/library/postgres:17. The copy Job runs it with the database's credentials and tls "
        "settings; the user must be allowed to create databases (CREATEDB). Not used on the cnpg tier: "
        "CloudNativePG itself restores the copy from the pre-upgrade Backup.",
    )
    timeout: str = Field(
        default="10m",
        pattern=DURATION_PATTERN,
        description="Deadline for the copy; past it, the upgrade rolls back.",
    )


class UpgradePolicy(CrdModel):
    strategy: Literal["Recreate", "BlueGreen"] = Field(
        default="Recreate",
        description="Recreate (the default): roll pod by pod where Keycloak supports old and new side "
        "by side (patch releases from 26.6), otherwise (a minor or major upgrade, or the cache cluster "
        "changes) stop every old pod before the first new one starts. BlueGreen: start a parallel green "
        "cluster and switch traffic when it is fully ready; only where the two versions can share the "
        "database (see allowDowntime). `keycloak-operator plan` shows the path an image would take.",
    )
    auto_teardown: bool = Field(default=True, description="BlueGreen: delete blue after cutover.")
    allow_downtime: bool = Field(
        default=False,
        description="BlueGreen: when an upgrade cannot be done without downtime (a minor or major upgrade, "
        "which migrates the schema, and no database copy can be made for green), recreate instead: every "
        "old pod stops before the first new one starts. False: such an upgrade is refused (Degraded, "
        "UpgradeRefused) and the running version keeps serving.",
    )
    database_copy: DatabaseCopy | None = Field(
        default=None,
        description="BlueGreen: an upgrade that migrates the schema (minor or major) runs green on a copy "
        "of the database, made when the upgrade starts, instead of recreating or refusing (managed and "
        "external: a new database on the same server; cnpg: a new Cluster recovered from the pre-upgrade "
        "Backup). Sign-ins keep working; what blue writes after the copy does not reach green. "
        "Unset: no copy is ever made.",
    )
    compatibility_check: bool = Field(
        default=False,
        description="Before an image change from and to Keycloak 26.2 or later, run `kc.sh "
        "update-compatibility` in a Job (the running configuration's metadata, then the check with the "
        "new image and configuration) and let its answer choose between rolling and recreating, or sharing "
        "and copying the database; nothing changes until it answers. Other versions, or a check that "
        "fails, fall back to the version rule.",
    )
    green_ready_timeout: str = Field(
        default="15m", pattern=DURATION_PATTERN, description="BlueGreen: deadline for green to become Ready."
    )
    backup_timeout: str = Field(
        default="10m", pattern=DURATION_PATTERN, description="BlueGreen: deadline for the pre-upgrade backup."
    )
    drain_delay: str = Field(
        default="10s", pattern=DURATION_PATTERN, description="BlueGreen: wait after cutover before blue goes."
    )
    rollout_timeout: str = Field(
        default="10m",
        pattern=DURATION_PATTERN,
        description="Recreate/rolling: a rollout whose new pods are not Ready within this time is reported "
        "Degraded (RolloutStalled); the previous version keeps serving where the strategy allows.",
    )
