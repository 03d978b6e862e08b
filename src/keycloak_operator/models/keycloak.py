"""The Keycloak custom resource: spec and status models. The CRD YAML is generated from these."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from keycloak_operator.kernel import patterns as pt
from keycloak_operator.models.base import CrdModel
from keycloak_operator.models.database_tls import DatabaseTls
from keycloak_operator.models.extensions import (
    EXTENSIONS_MAX,
    TRUSTSTORES_MAX,
    Extension,
    Truststore,
    unique_names,
)
from keycloak_operator.models.hostname import HostnameSpec, ProxySpec
from keycloak_operator.models.http_route import HttpRouteSpec
from keycloak_operator.models.ingress import IngressSpec
from keycloak_operator.models.metadata import PodMetadata, ServiceSettings
from keycloak_operator.models.monitoring import MonitoringSpec
from keycloak_operator.models.network_policy import NetworkPolicySpec
from keycloak_operator.models.options import AdditionalOption, FeaturesSpec, variable
from keycloak_operator.models.pod import (
    ContainerSecurityContextSpec,
    PodSecurityContextSpec,
    ProbesSpec,
    ShutdownSpec,
)
from keycloak_operator.models.scheduling import PodDisruptionBudgetSpec, SchedulingSpec
from keycloak_operator.models.unsupported import UnsupportedSpec
from keycloak_operator.models.workload import (
    VOLUMES_MAX,
    EnvVar,
    JvmSpec,
    LocalObjectReference,
    UserVolume,
    pull_secrets_field,
    unique_mount_paths,
)

DURATION_PATTERN = r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$"
QUANTITY_PATTERN = r"^[0-9]+(\.[0-9]+)?(m|k|Ki|M|Mi|G|Gi|T|Ti|E|Ei|P|Pi)?$"


class SecretKeyRef(CrdModel):
    """A Secret in the Keycloak's namespace holding `username` and `password` keys."""

    name: str = pt.object_name("Name of the Secret.")


class CnpgDatabase(CrdModel):
    """A CloudNativePG Cluster: host `<cluster>-rw`, credentials from Secret `<cluster>-app`."""

    # `<cluster>-rw` is a Service name (DNS-1035 label, 63 characters).
    cluster_name: str = Field(
        min_length=1, max_length=50, pattern=pt.DNS1035_LABEL, description="Name of the CNPG Cluster."
    )
    database: str = Field(
        default="app",
        min_length=1,
        max_length=63,
        pattern=pt.DATABASE,
        description="Database name inside the cluster.",
    )


TLS_DESCRIPTION = (
    "TLS to the database, for Keycloak (rendered as its db-url-properties) and the database-copy Job "
    "(PGSSLMODE, PGSSLROOTCERT) alike. Unset: the drivers' default, sslmode prefer (TLS when the server "
    "offers it, its certificate unchecked)."
)


class ManagedDatabase(CrdModel):
    """A PostgreSQL the operator reaches directly and can snapshot through its volume."""

    host: str = Field(min_length=1, max_length=253, pattern=pt.HOST, description="Database host name.")
    port: int = Field(default=5432, ge=1, le=65535, description="Database port.")
    database: str = Field(
        default="keycloak", min_length=1, max_length=63, pattern=pt.DATABASE, description="Database name."
    )
    credentials_secret: SecretKeyRef = Field(description="Secret with `username` and `password`.")
    tls: DatabaseTls | None = Field(default=None, description=TLS_DESCRIPTION)
    pvc_name: str | None = pt.object_name(
        "PersistentVolumeClaim of the database, snapshotted before upgrades.", default=None
    )
    volume_snapshot_class_name: str | None = pt.object_name(
        "VolumeSnapshotClass used for the pre-upgrade snapshot.", default=None
    )


class ExternalDatabase(CrdModel):
    """A PostgreSQL the operator cannot back up: upgrades warn and proceed."""

    host: str = Field(min_length=1, max_length=253, pattern=pt.HOST, description="Database host name.")
    port: int = Field(default=5432, ge=1, le=65535, description="Database port.")
    database: str = Field(
        default="keycloak", min_length=1, max_length=63, pattern=pt.DATABASE, description="Database name."
    )
    credentials_secret: SecretKeyRef = Field(description="Secret with `username` and `password`.")
    tls: DatabaseTls | None = Field(default=None, description=TLS_DESCRIPTION)


class DatabaseSpec(CrdModel):
    """Exactly one database tier."""

    cnpg: CnpgDatabase | None = Field(default=None, description="CloudNativePG tier.")
    managed: ManagedDatabase | None = Field(default=None, description="Managed PostgreSQL tier.")
    external: ExternalDatabase | None = Field(default=None, description="External PostgreSQL tier.")

    @property
    def tier(self) -> str:
        for tier in ("cnpg", "managed", "external"):
            if getattr(self, tier) is not None:
                return tier
        raise ValueError("no database tier set")


COPY_IMAGE_MESSAGE = (
    "spec.upgradePolicy.databaseCopy.image is required on the managed and external tiers (the copy Job runs "
    "it); the cnpg tier needs none"
)
# On the CRD's spec: the same rule as KeycloakSpec._copy_image_per_tier, so kubectl refuses it at once.
COPY_IMAGE_RULE = {
    "rule": "!has(self.upgradePolicy) || !has(self.upgradePolicy.databaseCopy) || has(self.database.cnpg) "
    "|| has(self.upgradePolicy.databaseCopy.image)",
    "message": COPY_IMAGE_MESSAGE,
}

DATABASE_EXACTLY_ONE_RULE = {
    "rule": "[has(self.cnpg), has(self.managed), has(self.external)].filter(x, x).size() == 1",
    "message": "exactly one of spec.database.cnpg, spec.database.managed or spec.database.external "
    "must be set",
}


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


Quantity = Annotated[str, Field(max_length=64, pattern=QUANTITY_PATTERN)]


class ResourceRequirements(CrdModel):
    requests: dict[str, Quantity] | None = Field(
        default=None, max_length=16, description="cpu / memory requests."
    )
    limits: dict[str, Quantity] | None = Field(
        default=None, max_length=16, description="cpu / memory limits."
    )

    @field_validator("requests", "limits")
    @classmethod
    def _resource_names(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        """The CRD checks the keys with RESOURCE_KEYS_RULE (a structural schema cannot pattern map keys)."""
        for key in value or {}:
            if len(key) > 253 or not re.fullmatch(pt.RESOURCE_KEY, key):
                raise ValueError(f"{key!r} is not a container resource (cpu, memory, example.com/gpu)")
        return value

    @model_validator(mode="after")
    def _fixed_resources_equal(self) -> ResourceRequirements:
        """Extended resources and huge pages cannot be overcommitted: Kubernetes wants request == limit."""
        for key, value in (self.requests or {}).items():
            if _fixed(key) and (self.limits or {}).get(key) != value:
                raise ValueError(f"requests[{key!r}] must equal limits[{key!r}] (it cannot be overcommitted)")
        return self


def _fixed(key: str) -> bool:
    return "/" in key or key.startswith("hugepages-")


FIXED_RESOURCES_RULE = {
    "rule": "!has(self.requests) || self.requests.all(k, !(k.contains('/') || k.startsWith('hugepages-')) "
    "|| (has(self.limits) && k in self.limits && self.limits[k] == self.requests[k]))",
    "message": "extended resources and huge pages need requests equal to limits",
}

RESOURCE_KEYS_RULE = {
    "rule": f"self.all(k, size(k) <= 253 && k.matches(r'{pt.RESOURCE_KEY}'))",
    "message": "keys must be container resources (cpu, memory, ephemeral-storage, hugepages-<size>, "
    "or an extended resource such as example.com/gpu)",
}


class TlsSpec(CrdModel):
    """HTTPS served by Keycloak itself, from a Secret."""

    secret: str = pt.object_name(
        "A `kubernetes.io/tls` Secret in the Keycloak's namespace (`tls.crt`, `tls.key`, and `ca.crt` when a "
        "private CA signed it). Keycloak serves HTTPS on 8443 with it, and the operator's own admin login "
        "goes over HTTPS with the certificate checked: against `ca.crt` when present, else the system's CAs. "
        "The certificate must name `<name>-service.<namespace>.svc.<cluster domain>`."
    )
    http_enabled: bool = Field(
        default=False,
        description="Keep plain HTTP on 8080 as well (off: with TLS on, HTTP is off unless this is set).",
    )


class KeycloakSpec(CrdModel):
    image: pt.ImageReference = Field(
        description="Keycloak container image, e.g. quay.io/keycloak/keycloak:26.0.0 "
        "([registry/]path[:tag][@sha256:...], a digest of sha256, sha384 or sha512)",
    )
    replicas: int = Field(default=1, ge=0, le=100, description="Number of Keycloak pods.")
    image_pull_secrets: list[LocalObjectReference] | None = pull_secrets_field()
    database: DatabaseSpec = Field(description="Database tier: exactly one of cnpg, managed or external.")
    cache_isolation: CacheIsolation = Field(
        default_factory=CacheIsolation, description="How the JGroups cache cluster name is chosen."
    )
    upgrade_policy: UpgradePolicy = Field(
        default_factory=UpgradePolicy, description="How image changes roll out."
    )
    admin_secret: SecretKeyRef | None = Field(
        default=None,
        description="Existing Secret with the bootstrap admin `username` and `password`. "
        "When unset the operator generates `<name>-initial-admin`.",
    )
    hostname: HostnameSpec | None = Field(
        default=None,
        description="The public address (issuer of tokens, base of links). Unset: Keycloak follows each "
        "request's Host header, reported by the HostnameFixed condition.",
    )
    proxy: ProxySpec | None = Field(
        default=None, description="Forwarding headers to believe from a reverse proxy. Unset: none."
    )
    tls: TlsSpec | None = Field(
        default=None, description="Serve HTTPS from a Secret; HTTP goes off unless tls.httpEnabled."
    )
    features: FeaturesSpec | None = Field(default=None, description="Keycloak features to turn on or off.")
    additional_options: list[AdditionalOption] | None = Field(
        default=None,
        max_length=64,
        description="Any other Keycloak option (`log-level`, `db-pool-max-size`, `spi-...`), from a value or "
        "a Secret key; the way to pass a secret setting.",
    )
    truststores: list[Truststore] | None = Field(
        default=None,
        max_length=TRUSTSTORES_MAX,
        description="Certificates to trust for outgoing TLS (identity providers, LDAP, SMTP, the database), "
        "from Secrets or ConfigMaps, mounted under /opt/keycloak/conf/truststores.",
    )
    extensions: list[Extension] | None = Field(
        default=None,
        max_length=EXTENSIONS_MAX,
        description="Providers and themes copied from images into the pods; with any, Keycloak is built in "
        "the pod before it starts (an init container) and starts optimized.",
    )
    volumes: list[UserVolume] | None = Field(
        default=None,
        max_length=VOLUMES_MAX,
        description="Volumes of yours mounted into the Keycloak container (a Secret, ConfigMap, emptyDir or "
        "PersistentVolumeClaim in the Keycloak's namespace), never over Keycloak's home or the operator's "
        "directories.",
    )
    start_optimized: bool = Field(
        default=False,
        description="The image is already built (`kc.sh build` run in it with the build options the "
        "operator sets: database postgres, health and metrics on, your features and build-time "
        "additionalOptions): start Keycloak with `--optimized`, skipping the build each pod start does "
        "otherwise. A different build makes Keycloak refuse to start, naming the option that differs.",
    )
    env: list[EnvVar] = Field(
        default_factory=list,
        max_length=pt.LIST_MAX,
        description="Extra environment variables for Keycloak: a value, or a key of a Secret or ConfigMap "
        "in the Keycloak's namespace.",
    )
    jvm: JvmSpec | None = Field(
        default=None,
        description="JVM options, through Keycloak's JAVA_OPTS_APPEND. Unset: Keycloak's defaults.",
    )
    resources: ResourceRequirements | None = Field(default=None, description="Container resources.")
    scheduling: SchedulingSpec | None = Field(
        default=None,
        description="Where the pods run (nodeSelector, tolerations, affinity, topologySpreadConstraints, "
        "priorityClassName), green's included.",
    )
    pod_disruption_budget: PodDisruptionBudgetSpec | None = Field(
        default=None,
        description="The PodDisruptionBudget of the server pods. Unset: maxUnavailable 1 whenever "
        "replicas > 1.",
    )
    pod_security_context: PodSecurityContextSpec | None = Field(
        default=None,
        description="Pod security settings over the defaults (runAsNonRoot, seccompProfile RuntimeDefault): "
        "user, group, fsGroup.",
    )
    security_context: ContainerSecurityContextSpec | None = Field(
        default=None,
        description="Container security settings over the defaults (no privilege escalation, every "
        "capability dropped): a read-only root filesystem.",
    )
    shutdown: ShutdownSpec | None = Field(
        default=None,
        description="Graceful shutdown. Unset: a stopping pod keeps serving 5 s after it leaves the "
        "endpoints, with a 30 s grace period.",
    )
    pod_metadata: PodMetadata | None = Field(
        default=None, description="Labels and annotations on the Keycloak pods, green's included."
    )
    service: ServiceSettings | None = Field(
        default=None,
        description="The public Service's type, annotations and labels; the operator keeps its selector, "
        "ports and own labels. Unset: a ClusterIP Service.",
    )
    probes: ProbesSpec | None = Field(
        default=None,
        description="Timing of the startup, readiness and liveness probes. Unset: the operator's defaults "
        "(startup and readiness every second, liveness every 10 s).",
    )
    ingress: IngressSpec | None = Field(
        default=None,
        description="An Ingress in front of the public Service (class, annotations, hosts, TLS). "
        "Unset: none.",
    )
    http_route: HttpRouteSpec | None = Field(
        default=None,
        description="A Gateway API HTTPRoute in front of the public Service (Gateways, hostnames), beside "
        "or instead of the Ingress; made only where the cluster serves gateway.networking.k8s.io/v1. "
        "Unset: none.",
    )
    monitoring: MonitoringSpec | None = Field(
        default=None, description="A Prometheus Operator ServiceMonitor for Keycloak's metrics."
    )
    network_policy: NetworkPolicySpec | None = Field(
        default=None,
        description="NetworkPolicies that let JGroups in only from the same cache cluster, and HTTP only "
        "from the given peers and the operator. Unset: none.",
    )
    unsupported: UnsupportedSpec | None = Field(
        default=None,
        description="UNSUPPORTED escape hatches (docs/adr/0025): no guarantee across operator versions.",
    )
    realm_namespaces: list[pt.NamespaceName] = pt.namespace_list(
        "Namespaces allowed to declare KeycloakRealms on this Keycloak, besides its own."
    )

    @model_validator(mode="after")
    def _one_value_per_variable(self) -> KeycloakSpec:
        """Two entries for one variable would be a Deployment the API server refuses (duplicate env names):
        spec.env names, and the variables additionalOptions become, must all differ."""
        seen: dict[str, str] = {}
        entries = [(e.name, f"env {e.name}") for e in self.env]
        entries += [(variable(o.name), f"additionalOptions {o.name}") for o in self.additional_options or []]
        for name, where in entries:
            if name in seen:
                raise ValueError(f"{where} sets {name} again (already set by {seen[name]})")
            seen[name] = where
        return self

    @model_validator(mode="after")
    def _copy_image_per_tier(self) -> KeycloakSpec:
        copy = self.upgrade_policy.database_copy
        if copy is not None and copy.image is None and self.database.cnpg is None:
            raise ValueError(COPY_IMAGE_MESSAGE)
        return self

    @model_validator(mode="after")
    def _unique_entries(self) -> KeycloakSpec:
        unique_names("truststores", self.truststores)
        unique_names("extensions", self.extensions)
        unique_names("imagePullSecrets", self.image_pull_secrets)
        unique_names("volumes", self.volumes)
        unique_mount_paths(self.volumes)
        return self


class Condition(CrdModel):
    type: str
    status: Literal["True", "False", "Unknown"]
    reason: str
    message: str = ""
    last_transition_time: str
    observed_generation: int | None = None


class Versions(CrdModel):
    next_version: str = Field(default="", description="Version being rolled out, empty when none.")
    current_version: str = Field(default="", description="Version running.")
    last_version: str = Field(default="", description="Last known good version: the rollback target.")


class CacheClusterStatus(CrdModel):
    name: str = Field(default="", description="Resolved JGroups cluster name; empty when isolation is off.")
    source: str = Field(default="", description="clusterName, autoRevision, autoSuffix or none.")
    isolated: bool = Field(
        default=False,
        description="Whether this cache cluster is kept apart: a name is resolved, and each pod discovers "
        "only the pods of its own cache cluster (on every version); from 26.7 Keycloak also checks the name.",
    )
    reason: str = Field(
        default="", description="How isolation holds (by membership, or by name too), or why it is off."
    )


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


class KeycloakStatus(CrdModel):
    observed_generation: int | None = None
    phase: str = Field(default="Pending", description="Pending, Running, Upgrading, Degraded or Failed.")
    replicas: int = 0
    ready_replicas: int = 0
    selector: str = Field(default="", description="Label selector of the serving pods (scale subresource).")
    track: str = Field(default="", description="Track (a or b) of the serving Deployment.")
    image: str = Field(default="", description="Image of the serving pods.")
    conditions: list[Condition] = Field(default_factory=list)
    versions: Versions = Field(default_factory=Versions)
    cache_cluster: CacheClusterStatus = Field(default_factory=CacheClusterStatus)
    database: DatabaseStatus | None = None
    blue_green: BlueGreenStatus | None = None
    upgrade_plan: UpgradePlanStatus | None = None
    preflight: PreflightStatus | None = None
    pod_defaults: str | None = Field(
        default=None,
        max_length=16,
        description="What the pods get where spec.scheduling or spec.resources is unset, fixed at the first "
        "pass: `ha` (a soft spread over nodes and zones; memory request 1700Mi, limit 2Gi) for a Keycloak "
        "made under an operator with defaults, `none` for one whose pods ran before (so an operator upgrade "
        "never rolls them).",
    )
