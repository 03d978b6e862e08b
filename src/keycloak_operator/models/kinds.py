"""The replicated kinds, one line each (ADR 0030): what the CRD generator, the RBAC rules, the listing, the
reporting, the metrics and the kopf handlers loop over. The order is the order of the generated CRDs and
RBAC rules; the realm, which every other kind names, is first. The order in which a round writes a realm's
contents is the shell's (shell/replication/kinds.py), because realm parts that are no kind of their own
(its roles, what it gives every user) take turns between the kinds."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from keycloak_operator.models import (
    authentication_flow,
    client,
    client_scope,
    group,
    identity_provider,
    realm,
)
from keycloak_operator.models.replicated import ReplicatedKind

REPLICATED: Final[tuple[ReplicatedKind, ...]] = (
    realm.DECLARED,
    client.DECLARED,
    client_scope.DECLARED,
    group.DECLARED,
    identity_provider.DECLARED,
    authentication_flow.DECLARED,
)
BY_KIND: Final[Mapping[str, ReplicatedKind]] = {k.kind: k for k in REPLICATED}
