"""What a Keycloak's status records of its changes: the versions, the plan of the last image change, its
preflight, the database the pods use, and the blue-green upgrade machine."""

from __future__ import annotations

from pydantic import Field

from keycloak_operator.models.base import CrdModel


class Versions(CrdModel):
    next_version: str = Field(default="", description="Version being rolled out, empty when none.")
    current_version: str = Field(default="", description="Version running.")
    last_version: str = Field(default="", description="Last known good version: the rollback target.")


class UpgradePlanStatus(CrdModel):
    """The path the upgrade planner chose for the last image change, and why (docs/guide/upgrades.md)."""

    path: str = Field(default="", description="Roll, BlueGreenShared, BlueGreenCopy, Recreate or Refuse.")
    from_image: str = Field(default="", description="The image that was running when the change was planned.")
    to_image: str = Field(default="", description="The image the spec asked for.")
    reason: str = Field(
        default="", description="The versions, what Keycloak supports between them, and what follows."
    )
    compatibility_check: str = Field(
        default="", description="The compatibility check Job and its answer, when one ran for this change."
    )
    downtime_started: str = Field(
        default="", description="Recreate: when the operator first saw no pod ready (the old pods stopped)."
    )
    downtime_seconds: int | None = Field(
        default=None,
        description="Recreate: seconds from downtimeStarted until the operator first saw a pod of the new "
        "version ready, as measured by the operator (each end to the second, plus its passes' latency).",
    )


class PreflightStatus(CrdModel):
    """What the preflight of the last image change found (docs/guide/upgrades.md, ADR 0024)."""

    job: str = Field(default="", description="The preflight Job of this change.")
    image: str = Field(default="", description="The image it proved, as the spec names it.")
    state: str = Field(default="", description="Pending, Passed or Failed.")
    version: str = Field(
        default="", description="The Keycloak version read from the image's files (not from its tag)."
    )
    digest: str = Field(
        default="", description="The manifest digest the node resolved for the image (sha256:...), if any."
    )
    message: str = Field(default="", description="What it found, or what failed.")
    build: str = Field(
        default="",
        description="What Keycloak said of the image's build for the pods' options: Read (their start "
        "builds nothing: buildOptions are the image's), Differs (it would build: buildOptions show the "
        "image's values of the options Keycloak named, at most 16), NotBuilt (not built with kc.sh build, "
        "or built with something Keycloak names no option for: providers, Quarkus properties); empty when "
        "it was not asked.",
    )
    build_options: list[str] = Field(
        default_factory=list,
        description="The build options the image was built with (option=value, each cut to 200 "
        "characters, at most 32), when build is Read or Differs.",
    )
    build_digest: str = Field(
        default="",
        description="SHA-256 of every build option the image was built with, uncut; only when build is "
        "Read, the one record that starts pods --optimized.",
    )


class DatabaseStatus(CrdModel):
    """Which database the pods use when an upgrade gave green a copy (the spec keeps the name you wrote)."""

    name: str = Field(
        default="",
        description="The database the canonical Deployment's pods use; on the cnpg tier, the CloudNativePG "
        "Cluster they use (its database keeps the spec's name).",
    )
    copied_from: str = Field(
        default="",
        description="The spec's database (cnpg: the spec's Cluster) this copy stands in for; empty when it "
        "is the spec's.",
    )
    serving: str = Field(
        default="", description="The database (cnpg: the Cluster) of the pods behind the public Service."
    )


class BlueGreenHistoryEntry(CrdModel):
    state: str
    at: str
    message: str = ""


class BlueGreenStatus(CrdModel):
    state: str = Field(default="Idle", description="Upgrade state.")
    blue_image: str = ""
    green_image: str = ""
    blue_track: str = ""
    green_track: str = ""
    backup_name: str = ""
    path: str = Field(default="", description="BlueGreenShared or BlueGreenCopy.")
    spec_database: str = Field(
        default="",
        description="The spec's database name when the upgrade started (what a copy stands in for).",
    )
    blue_database: str = Field(default="", description="The database (cnpg: the Cluster) blue runs on.")
    green_database: str = Field(
        default="", description="The database (cnpg: the Cluster) green runs on (a copy, or blue's)."
    )
    copy_job: str = Field(
        default="",
        description="BlueGreenCopy: the Job that copies the database (cnpg: the Cluster recovered from the "
        "backup).",
    )
    copy_started: str = Field(default="", description="BlueGreenCopy: when the copy was asked for.")
    write_window_seconds: int | None = Field(
        default=None,
        description="BlueGreenCopy: seconds from copyStarted to the cutover; what blue wrote then is not in "
        "green's database.",
    )
    started_at: str = ""
    deadline: str = ""
    message: str = ""
    history: list[BlueGreenHistoryEntry] = Field(default_factory=list)
