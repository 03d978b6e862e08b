"""The replicated resources counted by the phase their last round left them in, for the metrics
(`kcop_replicated_resources`, docs/guide/observability.md). Pure, and bounded: a kind or a phase outside
the fixed sets adds no series."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, get_args

from keycloak_operator.core.replication.sync import Phase
from keycloak_operator.models.kinds import REPLICATED

KINDS: Final = tuple(k.kind for k in REPLICATED)
PHASES: Final[tuple[str, ...]] = get_args(Phase)
# What a round leaves a resource in when replicating it failed (a Conflict or Forbidden is the user's to
# settle and has its own Warning event; Error is what the round could not do).
FAILING: Final = "Error"


def tally(phases: Iterable[tuple[str, str]]) -> dict[tuple[str, str], int]:
    """(kind, phase) of each resource -> how many; every pair of the fixed sets present, zeros included, so
    a series drops to 0 instead of freezing at its last value."""
    counts = {(k, p): 0 for k in KINDS for p in PHASES}
    for pair in phases:
        if pair in counts:
            counts[pair] += 1
    return counts
