"""Settings platform teams set on the Keycloak pods and the objects around them: registry credentials
(`spec.imagePullSecrets`). Everything here names objects in the Keycloak's own namespace only: a pod can
reference nothing else, so no field here reaches another tenant's Secrets."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from keycloak_operator.models import patterns as pt
from keycloak_operator.models.base import CrdModel

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
