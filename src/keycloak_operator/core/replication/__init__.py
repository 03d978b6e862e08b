"""Pure replication core (seed 003): identity, marker, diff, ownership and outcomes. No I/O, no clients."""

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
from keycloak_operator.core.replication.outcome import Outcome, apply_plan, outcomes
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
    "Outcome",
    "Plan",
    "Resolution",
    "Update",
    "apply_plan",
    "content_hash",
    "diff",
    "identity",
    "marked",
    "marker_attributes",
    "outcomes",
    "read_marker",
    "resolve",
    "strip_marker",
    "survivor",
]
