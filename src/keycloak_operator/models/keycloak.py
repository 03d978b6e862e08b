"""The Keycloak custom resource: spec and status models. The CRD YAML is generated from these.

The spec's larger parts have modules of their own: the database tiers (models/database.py), the cache
isolation (models/cache_isolation.py), the upgrade policy (models/upgrade_policy.py), hostname, proxy and
TLS (models/hostname.py); so has what the status records of changes (models/upgrade_status.py). The CEL
rules models/crd.py places on the spec stay here, beside the models they mirror.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from keycloak_operator.kernel import patterns as pt
from keycloak_operator.models.base import CrdModel, SecretKeyRef
from keycloak_operator.models.cache_isolation import CacheIsolation
from keycloak_operator.models.database import CnpgDatabase, ExternalDatabase, ManagedDatabase
from keycloak_operator.models.extensions import (
    EXTENSIONS_MAX,
    TRUSTSTORES_MAX,
    Extension,
    Truststore,
    unique_names,
)
from keycloak_operator.models.hostname import HostnameSpec, ProxySpec, TlsSpec
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
from keycloak_operator.models.upgrade_policy import UpgradePolicy
from keycloak_operator.models.upgrade_status import (
    BlueGreenStatus,
    DatabaseStatus,
    PreflightStatus,
    UpgradePlanStatus,
    Versions,
)
from keycloak_operator.models.workload import (
    VOLUMES_MAX,
    EnvVar,
    JvmSpec,
    LocalObjectReference,
    UserVolume,
    pull_secrets_field,
    unique_mount_paths,
)

QUANTITY_PATTERN = r"^[0-9]+(\.[0-9]+)?(m|k|Ki|M|Mi|G|Gi|T|Ti|E|Ei|P|Pi)?$"


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


DATABASE_EXACTLY_ONE_RULE = {
    "rule": "[has(self.cnpg), has(self.managed), has(self.external)].filter(x, x).size() == 1",
    "message": "exactly one of spec.database.cnpg, spec.database.managed or spec.database.external "
    "must be set",
}


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
