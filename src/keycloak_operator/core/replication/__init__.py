"""Pure replication core (ADR 0005): identity, marker, diff and ownership. No I/O, no clients."""

from keycloak_operator.core.replication.diff import diff, survivor
from keycloak_operator.core.replication.identity import ObjectKey, identity
from keycloak_operator.core.replication.marker import (
    MARKER_ATTRIBUTES,
    PREFIX,
    Marker,
    content_hash,
    marked,
    marker_attributes,
    read_marker,
    strip_marker,
)
from keycloak_operator.core.replication.ownership import Claim, Conflict, NaturalKey, Resolution, resolve
from keycloak_operator.core.replication.plan import Actual, Create, Delete, Desired, Operation, Plan, Update

__all__ = [
    "MARKER_ATTRIBUTES",
    "PREFIX",
    "Actual",
    "Claim",
    "Conflict",
    "Create",
    "Delete",
    "Desired",
    "Marker",
    "NaturalKey",
    "ObjectKey",
    "Operation",
    "Plan",
    "Resolution",
    "Update",
    "content_hash",
    "diff",
    "identity",
    "marked",
    "marker_attributes",
    "read_marker",
    "resolve",
    "strip_marker",
    "survivor",
]
