"""Protocol mappers the operator wrote that the token authority now refuses (a grant withdrawn), removed
from every object of a kind that carries them (clients, client scopes) whose mappers were not brought to
what it declares this round: not Ready, or its `protocolMappers` left unmanaged. A Ready object declaring
its mappers needs none of this: its refused ones are left out of what it declares, so its own writes
remove them. Read from the round's listing: a quiet round writes nothing."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from keycloak_operator.core.replication import token_mappers as tm
from keycloak_operator.core.replication.client_parts import MAPPER_HASH
from keycloak_operator.core.replication.round import Round
from keycloak_operator.core.replication.sync import Resource, ScopePlan
from keycloak_operator.kernel.events import Event
from keycloak_operator.shell import metrics
from keycloak_operator.shell.admin.connection import AdminError
from keycloak_operator.shell.ratelimit import WriteLimiter
from keycloak_operator.shell.replication.token_reads import AuthorityFor

# Deletes one mapper of an object: (the object's id, the mapper's id, the mapper's name).
DeleteMapper = Callable[[str, str, str], Awaitable[None]]


async def revoke_refused_mappers(
    rnd: Round,
    resources: list[Resource],
    scope: ScopePlan,
    observed: Mapping[str, Mapping[str, Any]],
    authority: AuthorityFor,
    limiter: WriteLimiter,
    delete: DeleteMapper,
    metrics_kind: str,
) -> None:
    """Each such object's refused mappers deleted, with a Warning naming them. A failed delete is retried
    next round and said in an event; the object keeps its verdict. `observed`: the objects as listed this
    round, by id."""
    leaving = {op.key for op in scope.plan.deletes} | {r.key for r in scope.releases}
    for r in resources:
        remote = scope.remote_ids.get(r.key)
        verdict = rnd.verdicts.get(r.key)
        managed = verdict is not None and verdict.phase == "Ready" and tm.MAPPERS_KEY in r.content
        if remote is None or r.key in leaving or managed:
            continue
        held = (observed.get(remote) or {}).get(tm.MAPPERS_KEY) or []
        removed = []
        for m in tm.held_refusals(authority(r.key.namespace), held, MAPPER_HASH):
            name = str(m.get("name"))
            try:
                await limiter.acquire(r.key.namespace)
                await delete(remote, str(m.get("id")), name)
            except AdminError as e:
                rnd.write_failed(r.key, f"protocol mapper {name}: {e}")
                break
            metrics.replication_write(metrics_kind, "delete")
            removed.append(name)
        if removed:
            message = f"removed protocol mappers no longer granted: {', '.join(removed)}"
            rnd.note(r.key, Event("Warning", tm.MAPPER_REVOKED, message))
