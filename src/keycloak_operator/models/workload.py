"""Settings platform teams set on the Keycloak pods and the objects around them: registry credentials
(`spec.imagePullSecrets`), environment variables (`spec.env`, from values or Secret and ConfigMap keys) and
JVM options (`spec.jvm`). Everything here names objects in the Keycloak's own namespace only: a pod can
reference nothing else, so no field here reaches another tenant's Secrets."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, model_validator

from keycloak_operator.models import patterns as pt
from keycloak_operator.models.base import CrdModel
from keycloak_operator.models.options import SECRET_KEY

PULL_SECRETS_MAX = 16


class LocalObjectReference(CrdModel):
    """An object in the Keycloak's namespace, by name."""

    name: str = pt.object_name("Name of the object, in the Keycloak's namespace.")


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
        "that carry cache isolation and the database; use the spec's fields or additionalOptions), and "
        "options files.",
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
        "message": "JGroups, Infinispan, Keycloak (-Dkc.) and Quarkus system properties and options files "
        "are refused: the operator sets what carries cache isolation and the database",
    }
