"""What a round writes back on each resource: its finalizer while it is replicated, then at the end its events
and either the finalizer's release or its status (patched only when it changed)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from keycloak_operator.core.common import merge_patch
from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.objects import forbidden_since
from keycloak_operator.core.replication.round import Round
from keycloak_operator.core.replication.status import render
from keycloak_operator.core.replication.sync import Revocation
from keycloak_operator.kernel import names
from keycloak_operator.kernel.events import Event

Obj = Mapping[str, Any]


def finalizer_added(obj: Obj) -> dict[str, Any] | None:
    """The patch that adds the replication finalizer to a resource that lacks it and is not being deleted
    (guarded by its resourceVersion); None when there is nothing to add."""
    meta = obj["metadata"]
    finalizers = meta.get("finalizers") or []
    if meta.get("deletionTimestamp") or names.REPLICATION_FINALIZER in finalizers:
        return None
    return {
        "metadata": {
            "finalizers": [*finalizers, names.REPLICATION_FINALIZER],
            "resourceVersion": meta["resourceVersion"],
        }
    }


@dataclass(frozen=True)
class Report:
    """Written in this order: `events`; then `release` (the finalizer goes) or, for a resource this round
    decided, its result counted in metrics, `transition` posted and `status` patched (when not empty)."""

    events: list[Event] = field(default_factory=list)
    release: dict[str, Any] | None = None
    ok: bool | None = None  # None: not decided by this round (another server's), nothing else written
    status: dict[str, Any] = field(default_factory=dict)
    transition: Event | None = None  # turned Conflict or Forbidden: a Warning besides the status
    conflict: bool = False  # turned Conflict: counted in metrics


def report(rnd: Round, key: ObjectKey, obj: Obj, now: datetime, revocation_grace: timedelta) -> Report:
    meta = obj["metadata"]
    events = list(rnd.events.get(key, []))
    if key in rnd.finalizable and meta.get("deletionTimestamp"):
        kept = [f for f in meta.get("finalizers") or [] if f != names.REPLICATION_FINALIZER]
        return Report(events, {"metadata": {"finalizers": kept, "resourceVersion": meta["resourceVersion"]}})
    verdict = rnd.verdicts.get(key)
    if verdict is None:
        return Report(events)
    previous = obj.get("status") or {}
    if verdict.phase == "Forbidden" and verdict.revocable:  # the schedule, whichever path decided it
        schedule = Revocation(now, revocation_grace).message(forbidden_since(obj), key.kind)
        verdict = replace(verdict, message=verdict.message + schedule)
    status = render(
        previous,
        verdict,
        generation=int(meta.get("generation") or 0),
        keycloak_id=rnd.remote_ids.get(key, ""),
        content_hash=rnd.hashes.get(key, ""),
        now=now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        revocation=revocation_grace > timedelta(0) and verdict.revocable,
    )
    patch = merge_patch.merge_patch(dict(previous), status)
    changed = verdict.phase != (previous.get("phase") or "")
    transition = None
    if patch and changed and verdict.phase in ("Conflict", "Forbidden"):
        transition = Event("Warning", verdict.reason, verdict.message)
    conflict = transition is not None and verdict.phase == "Conflict"
    return Report(events, None, verdict.phase != "Error", patch, transition, conflict)
