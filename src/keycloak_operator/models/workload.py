"""Settings platform teams set on the Keycloak pods and the objects around them: registry credentials
(`spec.imagePullSecrets`), environment variables (`spec.env`, from values or Secret and ConfigMap keys),
JVM options (`spec.jvm`) and volumes of their own (`spec.volumes`). Everything here names objects in the
Keycloak's own namespace only: a pod can reference nothing else, so no field here reaches another tenant's
Secrets."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from keycloak_operator.kernel import patterns as pt
from keycloak_operator.models.base import CrdModel
from keycloak_operator.models.extensions import IMAGE_PATH, LocalObjectReference
from keycloak_operator.models.options import SECRET_KEY

PULL_SECRETS_MAX = 16


def pull_secrets_field() -> Any:
    return Field(
        default=None,
        max_length=PULL_SECRETS_MAX,
        description="Secrets (`kubernetes.io/dockerconfigjson`, in the Keycloak's namespace) the kubelet "
        "pulls the images with: Keycloak's, the extensions' images, and every Job the operator runs (the "
        "compatibility check, the database copy), green's pods included. A Secret that does not exist is "
        "skipped by the kubelet, as for any pod.",
    )


class KeySelector(CrdModel):
    """One key of a Secret or ConfigMap in the Keycloak's namespace."""

    name: str = pt.object_name("Name of the object, in the Keycloak's namespace.")
    key: str = Field(min_length=1, max_length=pt.SUBDOMAIN_MAX, pattern=SECRET_KEY, description="Key in it.")


class EnvSource(CrdModel):
    """Where a variable's value comes from: exactly one of a Secret key or a ConfigMap key."""

    secret_key_ref: KeySelector | None = Field(default=None, description="A key of a Secret.")
    config_map_key_ref: KeySelector | None = Field(default=None, description="A key of a ConfigMap.")

    @model_validator(mode="after")
    def _one_source(self) -> EnvSource:
        if (self.secret_key_ref is None) == (self.config_map_key_ref is None):
            raise ValueError("valueFrom: set exactly one of secretKeyRef or configMapKeyRef")
        return self


ENV_SOURCE_RULE = {
    "rule": "has(self.secretKeyRef) != has(self.configMapKeyRef)",
    "message": "set exactly one of secretKeyRef or configMapKeyRef",
}
ENV_VALUE_OR_SOURCE_RULE = {
    "rule": "!has(self.valueFrom) || !has(self.value) || self.value == ''",
    "message": "set value or valueFrom, not both",
}


class EnvVar(CrdModel):
    name: str = Field(
        min_length=1,
        max_length=256,
        pattern=pt.ENV_NAME,
        description="Environment variable name (letters, digits and '_', not starting with a digit). "
        "Names the operator sets itself (database, admin, cache and JVM options) are refused.",
    )
    # "" by default, never None: the value is in the spec hash of every Keycloak stored before valueFrom.
    value: str = Field(default="", max_length=32768, description="Value.")
    value_from: EnvSource | None = Field(
        default=None,
        description="Or: the value from a key of a Secret or ConfigMap in the Keycloak's namespace (the "
        "value never appears in the Deployment). The pods are not rolled while the object is missing.",
    )

    @model_validator(mode="after")
    def _value_or_source(self) -> EnvVar:
        if self.value_from is not None and self.value:
            raise ValueError(f"env {self.name}: set value or valueFrom, not both")
        return self


# One JVM option as kc.sh passes it on: it splits JAVA_OPTS_APPEND at white space with xargs, which also reads
# quotes and backslashes, so none of those; and it starts with `-`, so never an `@argfile` the launcher would
# read more options from. Printable ASCII without space, `"`, `'` or a backslash.
JVM_OPTION = r"^-[\x21\x23-\x26\x28-\x5b\x5d-\x7e]+$"
JVM_OPTION_MAX = 1024
JVM_OPTIONS_MAX = 64
# What carries cache isolation or the operator's settings, compared in lower case: JGroups and Infinispan
# read their discovery and cluster settings from system properties, Keycloak reads any option as `kc.<name>`
# and Quarkus its own configuration as `quarkus.*` (the database among them); an options file would add any
# of these unseen.
JVM_RESERVED_PREFIXES = (
    "-djgroups.",
    "-dorg.jgroups.",
    "-dinfinispan.",
    "-dorg.infinispan.",
    "-dkc.",
    "-dquarkus.",
    "-xx:vmoptionsfile",
    "-xx:flags",
    # More configuration files (SmallRye's locations), and how names resolve: JGroups finds its peers by
    # resolving the membership Service's name, so a resolver or hosts file of the user's could hand it another
    # cache cluster's pods.
    "-dsmallrye.",
    "-djava.naming.",
    "-djdk.net.",
    "-dsun.net.",
    "-dnetworkaddress.",
    # Shell commands the JVM runs on an error.
    "-xx:onerror",
    "-xx:onoutofmemoryerror",
)

JvmOption = Annotated[str, Field(min_length=2, max_length=JVM_OPTION_MAX, pattern=JVM_OPTION)]


def jvm_option_reserved(option: str) -> bool:
    return option.lower().startswith(JVM_RESERVED_PREFIXES)


class JvmSpec(CrdModel):
    """Options for Keycloak's JVM, appended through Keycloak's own `JAVA_OPTS_APPEND` after its defaults."""

    options: list[JvmOption] = Field(
        default_factory=list,
        max_length=JVM_OPTIONS_MAX,
        description="JVM options appended after Keycloak's defaults (a later option wins), e.g. "
        "`-XX:MaxRAMPercentage=60`, `-Xss512k`, `-Duser.timezone=UTC`, `-javaagent:/opt/agent/agent.jar`. "
        "Unset, Keycloak's own defaults stay: heap up to 70% of the container's memory limit "
        "(-XX:MaxRAMPercentage=70, initial 50%). One option per entry, no spaces or quotes. Refused: "
        "system properties of JGroups, Infinispan, Keycloak (`-Dkc.`) and Quarkus (the operator sets those "
        "that carry cache isolation and the database; use the spec's fields or additionalOptions), "
        "SmallRye's configuration locations, name resolution (java.naming, jdk.net, sun.net, "
        "networkaddress), options files and -XX:OnError/-XX:OnOutOfMemoryError commands.",
    )

    @model_validator(mode="after")
    def _not_reserved(self) -> JvmSpec:
        for option in self.options:
            if jvm_option_reserved(option):
                raise ValueError(f"jvm.options {option!r}: set by the operator or able to change it")
        return self


def jvm_reserved_rule() -> dict[str, str]:
    """The CRD's copy of the reserved prefixes, checked on each item."""
    checks = " || ".join(f"self.lowerAscii().startsWith('{p}')" for p in JVM_RESERVED_PREFIXES)
    return {
        "rule": f"!({checks})",
        "message": "JGroups, Infinispan, Keycloak (-Dkc.), Quarkus, SmallRye and name-resolution system "
        "properties, options files and -XX:OnError commands are refused: the operator sets what carries "
        "cache isolation and the database",
    }


# --- spec.volumes ---------------------------------------------------------------------------------------

VOLUMES_MAX = 16
VOLUME_NAME_MAX = 40  # a DNS label once prefixed with `user-`
VOLUME_PREFIX = "user-"  # the pod's volume name: never one of the operator's (tls, data, truststore-...)
# Where no user volume may be mounted, at, above or below: Keycloak's home (its configuration files could set
# the cache configuration and the operator's other options, its lib the build), /tmp (the operator's
# writable directory with a read-only root), and the kernel's file systems.
# The resolver's and the host's files too (JGroups finds its peers by resolving the membership Service's
# name: another resolver could hand it another cache cluster's pods), and the ServiceAccount token's place.
FORBIDDEN_MOUNTS = (
    "/opt/keycloak",
    "/tmp",
    "/proc",
    "/sys",
    "/dev",
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/hostname",
    "/etc/nsswitch.conf",
    "/var/run/secrets",
    "/run/secrets",
)


def mount_conflict(path: str) -> str | None:
    """The operator's path a mount at `path` would cover or be inside of, if any."""
    for forbidden in FORBIDDEN_MOUNTS:
        if path == forbidden or path.startswith(f"{forbidden}/") or forbidden.startswith(f"{path}/"):
            return forbidden
    return None


class EmptyDirSource(CrdModel):
    size_limit: str | None = Field(
        default=None,
        max_length=64,
        pattern=r"^[0-9]+(\.[0-9]+)?(k|Ki|M|Mi|G|Gi|T|Ti)?$",
        description="Most this directory may hold (a quantity, e.g. 1Gi).",
    )
    medium: Literal["Memory"] | None = Field(default=None, description="Memory: a tmpfs.")


class ClaimSource(CrdModel):
    claim_name: str = pt.object_name("A PersistentVolumeClaim in the Keycloak's namespace.")


class UserVolume(CrdModel):
    """A volume of yours mounted into the Keycloak container: exactly one source, in the Keycloak's
    namespace. No host paths, nothing mounted over Keycloak's home or /tmp."""

    name: str = Field(
        min_length=1,
        max_length=VOLUME_NAME_MAX,
        pattern=pt.DNS1123_LABEL,
        description="Name of this volume (a DNS label, unique in the list); the pod's volume is "
        "`user-<name>`.",
    )
    mount_path: str = Field(
        min_length=2,
        max_length=512,
        pattern=IMAGE_PATH,
        description="Absolute path in the Keycloak container, no `.` or `..` segments; not at, above or "
        f"under {', '.join(FORBIDDEN_MOUNTS)} (Keycloak's home, the operator's directories, the resolver's "
        "files and the ServiceAccount token's).",
    )
    sub_path: str | None = Field(
        default=None,
        min_length=1,
        max_length=256,
        pattern=r"^[A-Za-z0-9_][A-Za-z0-9._-]*$",
        description="One file or directory of the volume to mount instead of all of it (a plain name).",
    )
    read_only: bool | None = Field(
        default=None, description="Mount read-only. Unset: read-only for a Secret or ConfigMap."
    )
    secret: LocalObjectReference | None = Field(default=None, description="A Secret's keys as files.")
    config_map: LocalObjectReference | None = Field(default=None, description="A ConfigMap's keys as files.")
    empty_dir: EmptyDirSource | None = Field(default=None, description="An empty directory for the pod.")
    persistent_volume_claim: ClaimSource | None = Field(
        default=None,
        description="A PersistentVolumeClaim (every pod mounts it: ReadWriteMany or one replica).",
    )

    @model_validator(mode="after")
    def _one_source_and_a_safe_path(self) -> UserVolume:
        sources = [self.secret, self.config_map, self.empty_dir, self.persistent_volume_claim]
        if sum(s is not None for s in sources) != 1:
            raise ValueError(
                f"volumes {self.name}: set exactly one of secret, configMap, emptyDir or "
                "persistentVolumeClaim"
            )
        forbidden = mount_conflict(self.mount_path)
        if forbidden is not None:
            raise ValueError(f"volumes {self.name}: mountPath {self.mount_path} overlaps {forbidden}")
        return self

    def pod_volume(self) -> dict[str, Any]:
        name = f"{VOLUME_PREFIX}{self.name}"
        if self.secret is not None:
            return {"name": name, "secret": {"secretName": self.secret.name}}
        if self.config_map is not None:
            return {"name": name, "configMap": {"name": self.config_map.name}}
        if self.persistent_volume_claim is not None:
            return {
                "name": name,
                "persistentVolumeClaim": {"claimName": self.persistent_volume_claim.claim_name},
            }
        return {"name": name, "emptyDir": self.empty_dir.wire() if self.empty_dir else {}}

    def mount(self) -> dict[str, Any]:
        read_only = self.read_only
        if read_only is None:
            read_only = self.secret is not None or self.config_map is not None
        out: dict[str, Any] = {"name": f"{VOLUME_PREFIX}{self.name}", "mountPath": self.mount_path}
        if self.sub_path:
            out["subPath"] = self.sub_path
        if read_only:
            out["readOnly"] = True
        return out


def _mount_rule() -> dict[str, str]:
    overlaps = " || ".join(
        f"self.mountPath == '{p}' || self.mountPath.startsWith('{p}/') "
        f"|| '{p}'.startsWith(self.mountPath + '/')"
        for p in FORBIDDEN_MOUNTS
    )
    return {
        "rule": f"!({overlaps})",
        "message": f"mountPath must not be at, above or under {', '.join(FORBIDDEN_MOUNTS)}",
        "fieldPath": ".mountPath",
    }


VOLUME_RULES = [
    {
        "rule": "[has(self.secret), has(self.configMap), has(self.emptyDir), has(self.persistentVolumeClaim)]"
        ".filter(x, x).size() == 1",
        "message": "set exactly one of secret, configMap, emptyDir or persistentVolumeClaim",
    },
    _mount_rule(),
]


def unique_mount_paths(volumes: list[UserVolume] | None) -> None:
    seen: set[str] = set()
    for volume in volumes or []:
        if volume.mount_path in seen:
            raise ValueError(f"volumes {volume.name}: mountPath {volume.mount_path} is used twice")
        seen.add(volume.mount_path)
