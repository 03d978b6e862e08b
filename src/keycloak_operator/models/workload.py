"""Settings platform teams set on the Keycloak pods and the objects around them: registry credentials
(`spec.imagePullSecrets`) and environment variables (`spec.env`, from values or Secret and ConfigMap keys).
Everything here names objects in the Keycloak's own namespace only: a pod can reference nothing else, so no
field here reaches another tenant's Secrets."""

from __future__ import annotations

from typing import Any

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
