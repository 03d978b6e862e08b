"""The mappers of objects just written or in sync, brought to what each declares: one loop for every kind that
has mappers (a client scope's protocol mappers, an identity provider's mappers), the kind giving how its
mappers are read, planned and written (ADR 0030).

A failure, a refusal, or a declared name held by a hand-made mapper, is that object's alone; writes to an
object whose own content did not change this round are a hand edit repaired, said in an event.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.round import Round
from keycloak_operator.core.replication.sync import Resource, ScopePlan, Verdict
from keycloak_operator.kernel.events import Event
from keycloak_operator.shell import metrics
from keycloak_operator.shell.admin.connection import AdminError
from keycloak_operator.shell.ratelimit import WriteLimiter


class MapperWrite(Protocol):
    @property
    def operation(self) -> str: ...
    @property
    def remote_id(self) -> str | None: ...
    @property
    def body(self) -> Mapping[str, Any] | None: ...


class MapperPlan(Protocol):
    @property
    def writes(self) -> Sequence[Any]: ...
    @property
    def conflicts(self) -> Sequence[str]: ...
    def ordered(self) -> Sequence[Any]: ...
    def changed(self) -> list[str]: ...


@dataclass(frozen=True)
class Mappers:
    """How one kind's mappers are handled."""

    kind: str  # the metrics' kind of the mappers
    field: str  # where an object's content declares them; absent: its mappers are not managed
    label: str  # in an error on the object: "protocol mappers"
    # What the planner reads for the object at this remote id; `written`: the object was written this round,
    # so a listing read before the write is stale.
    read: Callable[[Resource, str, bool], Awaitable[Any]]
    # The plan, and the verdict for the mappers the token authority refused (None: none refused).
    plan: Callable[[Resource, Any], tuple[MapperPlan, Verdict | None]]
    write: Callable[[str, Any], Awaitable[None]]  # one planned write, to the object at this remote id


async def sync_mappers(
    rnd: Round, declared: Sequence[Resource], scope: ScopePlan, limiter: WriteLimiter, how: Mappers
) -> None:
    """Each declared object in sync or just written: its mappers brought to what it declares."""
    written = {op.key for op in scope.plan.creates} | {op.key for op in scope.plan.updates}
    worse: dict[ObjectKey, Verdict] = {}
    for r in declared:
        remote = scope.remote_ids.get(r.key)
        verdict = rnd.verdicts.get(r.key)
        if r.deleting or remote is None or verdict is None or verdict.phase != "Ready":
            continue
        if how.field not in r.content:
            continue
        try:
            plan, refused = how.plan(r, await how.read(r, remote, r.key in written))
            for w in plan.ordered():
                await limiter.acquire(r.key.namespace)
                await how.write(remote, w)
                metrics.replication_write(how.kind, w.operation)
        except AdminError as e:
            rnd.failed = True
            rnd.verdicts[r.key] = Verdict("Error", "WriteFailed", f"{how.label}: {e}")
            continue
        if plan.conflicts:
            held = ", ".join(plan.conflicts)
            message = f"held by objects the operator did not create, left alone: {held}"
            worse[r.key] = Verdict("Conflict", "Conflict", message + "; everything else was written")
        if refused is not None:  # worse than a conflict: said first
            worse[r.key] = refused
        if plan.writes and r.key not in written:  # the object's content did not change: a hand edit
            message = f"restored what was edited in Keycloak: {', '.join(plan.changed())}"
            rnd.note(r.key, Event("Normal", "DriftRepaired", message))
    rnd.verdicts.update(worse)
