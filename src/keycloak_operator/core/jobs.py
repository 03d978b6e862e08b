"""How a Job ended, read from its own conditions (the one contract batch/v1 gives): shared by the Jobs the
operator runs (the compatibility check, the database copy)."""

from __future__ import annotations

from typing import Any, NamedTuple


class Ended(NamedTuple):
    succeeded: bool
    reason: str  # the Failed condition's reason (PodFailurePolicy, BackoffLimitExceeded, ...); "" on success


def ended(obj: dict[str, Any]) -> Ended | None:
    """The Job's terminal condition; None while it runs."""
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("status") != "True":
            continue
        if condition.get("type") == "Complete":
            return Ended(True, "")
        if condition.get("type") == "Failed":
            return Ended(False, str(condition.get("reason") or ""))
    return None
