"""What every replicated kind declares about itself once: its Kubernetes names, its CRD, and the few facts
the rest of the operator asks per kind (ADR 0030).

A kind's model module holds its declaration (`DECLARED`); `models/kinds.py` lists the declarations in the
round's order; the CRD generator, the RBAC rules, the listing, the reporting, the metrics and the kopf
handlers loop over that list instead of naming kinds one by one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from keycloak_operator.models.base import CrdModel
from keycloak_operator.models.keycloak import Condition

Schema = dict[str, Any]


@dataclass(frozen=True)
class Column:
    """A printer column of `kubectl get`; priority 1 shows only with `-o wide`."""

    name: str
    path: str
    type: str = "string"
    priority: int = 0


def no_rules(_schema: Schema) -> None:
    """A kind whose schema needs nothing the models cannot say."""


@dataclass(frozen=True)
class ReplicatedKind:
    kind: str  # kernel/names.py owns the kind and plural strings
    plural: str
    short_name: str
    what: str  # the kind in prose, plural: "client scopes" (RBAC reasons)
    spec: type[BaseModel]
    description: str  # the CRD's description
    columns: tuple[Column, ...]  # "Age" is added last to every kind
    # What JSON Schema cannot say, added to the generated schema: CEL rules, list types.
    schema_rules: Callable[[Schema], None] = no_rules
    # Served whenever the operator runs (their CRDs came first); the others may be missing after an upgrade
    # that added no CRD (`helm upgrade` never does), and a missing one reads as none of it.
    required: bool = False
    # Its object in Keycloak has an `enabled` switch, which revocation turns off before it deletes; the
    # others are kept as they are until deleted.
    switched: bool = False
    # Declared inside a realm (`spec.realm`); only the realm itself is not.
    in_realm: bool = True
    # The spec paths that can put something into a token (a role, a group, a claim, an audience, a scope's
    # mappers). Declared, not enforced here: the kind's writer must judge each through the one token
    # authority (core/replication/token_authority.py, ADR 0012) before writing it. A unit test finds every
    # such field in the schema, so none goes undeclared and a reviewer sees which fields to check.
    token_fields: tuple[str, ...] = ()


class ReplicatedStatus(CrdModel):
    observed_generation: int | None = None
    phase: Literal["Pending", "Ready", "Conflict", "Forbidden", "Error", "Deleting"] = "Pending"
    keycloak_id: str = Field(default="", description="The object's id inside Keycloak.")
    content_hash: str = Field(default="", description="Hash of the content last written.")
    forbidden_since: str | None = Field(
        default=None,
        description="Since when this resource has been Forbidden (its namespace no longer allowed): its "
        "object in Keycloak is disabled, then deleted, after the operator's grace period.",
    )
    conditions: list[Condition] = Field(default_factory=list)
