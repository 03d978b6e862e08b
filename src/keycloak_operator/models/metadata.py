"""Labels and annotations users add to what the operator makes (`spec.service`, `spec.podMetadata`), and the
one rule every such field asks: keys the operator sets or selects by are never the user's.

The operator's own labels select its children (`app.kubernetes.io/instance`, `.../component`), keep blue and
green apart (`kcop.dev/track`) and keep cache clusters apart (`kcop.dev/cache-cluster`): a user label of one
of those keys could move a pod into another cluster's discovery or another Service's endpoints. So every key
of the operator's (`app.kubernetes.io/` keys it sets, anything under `kcop.dev`) is refused, naming the field.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from keycloak_operator.kernel import names
from keycloak_operator.kernel import patterns as pt
from keycloak_operator.models.base import CrdModel
from keycloak_operator.models.scheduling import check_label_keys

METADATA_MAX = 32
ANNOTATION_VALUE_MAX = 4096
# The app.kubernetes.io keys the operator sets on its children; others (part-of, ...) stay the user's.
OPERATOR_LABEL_KEYS = frozenset(
    {
        names.LABEL_NAME,
        names.LABEL_INSTANCE,
        names.LABEL_COMPONENT,
        names.LABEL_MANAGED_BY,
        # Not set today, but the recommended label for the version the operator runs: kept for it.
        "app.kubernetes.io/version",
    }
)

LabelValue = Annotated[str, Field(max_length=pt.LABEL_MAX, pattern=pt.LABEL_VALUE)]
AnnotationValue = Annotated[str, Field(max_length=ANNOTATION_VALUE_MAX)]


def reserved_key(key: str) -> bool:
    """Whether a label or annotation key is the operator's: one of its app.kubernetes.io labels, or any key
    under its group's domain (kcop.dev/..., x.kcop.dev/...)."""
    domain = key.rpartition("/")[0].lower()
    return key in OPERATOR_LABEL_KEYS or domain == names.GROUP or domain.endswith(f".{names.GROUP}")


def check_user_keys(value: dict[str, str] | None, what: str) -> dict[str, str] | None:
    """Well-formed keys (models/scheduling.py) that are not the operator's."""
    check_label_keys(value, what)
    for key in value or {}:
        if reserved_key(key):
            raise ValueError(f"{key!r} is set by the operator (its selectors and isolation depend on it)")
    return value


def labels_field(where: str) -> Any:
    return Field(
        default=None,
        max_length=METADATA_MAX,
        description=f"Labels added to {where}. The operator's own keys (app.kubernetes.io/name, instance, "
        "component, managed-by, version, and anything under kcop.dev) are refused: its selectors and cache "
        "isolation depend on them.",
    )


def annotations_field(where: str) -> Any:
    return Field(
        default=None,
        max_length=METADATA_MAX,
        description=f"Annotations added to {where}, as written; keys under kcop.dev are the operator's and "
        "refused.",
    )


class UserMetadata(CrdModel):
    """Labels and annotations of the user's on an object the operator makes: never one of its own keys."""

    @field_validator("annotations", check_fields=False)
    @classmethod
    def _annotation_keys(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        return check_user_keys(value, "an annotation")

    @field_validator("labels", check_fields=False)
    @classmethod
    def _label_keys(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        return check_user_keys(value, "a label")


class ServiceSettings(UserMetadata):
    """The public Service `<name>-service`: its type and metadata. The operator keeps its selector, ports and
    labels."""

    type: Literal["ClusterIP", "NodePort", "LoadBalancer"] | None = Field(
        default=None,
        description="ClusterIP (unset), NodePort or LoadBalancer. A LoadBalancer is what your cluster's load "
        "balancer controller makes of it (give its settings as annotations).",
    )
    annotations: dict[str, AnnotationValue] | None = annotations_field("the public Service")
    labels: dict[str, LabelValue] | None = labels_field("the public Service")


class PodMetadata(UserMetadata):
    """Labels and annotations on the Keycloak pods (green's too)."""

    annotations: dict[str, AnnotationValue] | None = annotations_field("every Keycloak pod")
    labels: dict[str, LabelValue] | None = labels_field("every Keycloak pod")
