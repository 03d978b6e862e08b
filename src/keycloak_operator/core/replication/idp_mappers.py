"""An identity provider's mappers: part of its content (identity_provider.py), written through their own
endpoints, by name, as a client's protocol mappers are (client_parts.py). Only mappers carrying the
operator's `kcop.dev.content-hash` config key are updated or deleted; a declared name held by a hand-made
mapper is a conflict, left alone."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from keycloak_operator.core.replication.identity_provider import MAPPERS, Obj
from keycloak_operator.core.replication.marker import content_hash

MAPPER_HASH: Final = "kcop.dev.content-hash"  # as a client's mappers (client_parts.py)


@dataclass(frozen=True)
class MapperWrite:
    operation: Literal["delete", "create", "update"]
    name: str
    remote_id: str | None = None
    body: Mapping[str, Any] | None = None


@dataclass
class MapperPlan:
    writes: list[MapperWrite] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)  # `mapper x`: made by hand, left alone

    def ordered(self) -> list[MapperWrite]:
        rank = {"delete": 0, "create": 1, "update": 2}
        return sorted(self.writes, key=lambda w: rank[w.operation])

    def changed(self) -> list[str]:
        return sorted({f"{MAPPERS}/{w.name}" for w in self.writes})


def mapper_body(alias: str, declared: Obj, remote_id: str | None = None) -> dict[str, Any]:
    body = {
        "name": declared["name"],
        "identityProviderAlias": alias,
        "identityProviderMapper": declared["identityProviderMapper"],
        "config": {**declared["config"], MAPPER_HASH: content_hash(declared)},
    }
    return body if remote_id is None else {**body, "id": remote_id}


def mapper_config(mapper: Obj) -> Mapping[str, Any]:
    """A mapper's config as read; one that is not a map (a server's odd answer) as none: a foreign mapper."""
    config = mapper.get("config")
    return config if isinstance(config, Mapping) else {}


def _in_step(declared: Obj, seen: Obj) -> bool:
    config = mapper_config(seen)
    return (
        seen.get("identityProviderMapper") == declared["identityProviderMapper"]
        and config.get(MAPPER_HASH) == content_hash(declared)
        and all(config.get(k) == v for k, v in declared["config"].items())
    )


def release_mappers(alias: str, observed: Iterable[Obj]) -> list[MapperWrite]:
    """Preserve on delete: each mapper the operator made, updated without its content-hash key, so that it
    stays and is no longer taken for the operator's."""
    return [
        MapperWrite(
            "update",
            str(m.get("name")),
            str(m.get("id")),
            {
                **m,
                "identityProviderAlias": alias,
                "config": {k: v for k, v in mapper_config(m).items() if k != MAPPER_HASH},
            },
        )
        for m in observed
        if isinstance(m, Mapping) and isinstance(m.get("id"), str) and MAPPER_HASH in mapper_config(m)
    ]


def plan_mappers(content: Obj, observed: Iterable[Obj] | None) -> MapperPlan:
    """The provider's mapper writes (none when it declares no mappers), by name."""
    plan = MapperPlan()
    if MAPPERS not in content:
        return plan
    alias = str(content["alias"])
    existing = {str(m.get("name")): m for m in observed or [] if isinstance(m, Mapping)}
    ours = {n for n, m in existing.items() if MAPPER_HASH in mapper_config(m)}
    declared = {m["name"]: m for m in content[MAPPERS]}
    for name in sorted(ours - declared.keys()):
        plan.writes.append(MapperWrite("delete", name, str(existing[name].get("id"))))
    for name, want in sorted(declared.items()):
        seen = existing.get(name)
        if seen is None:
            plan.writes.append(MapperWrite("create", name, None, mapper_body(alias, want)))
        elif name not in ours:
            plan.conflicts.append(f"mapper {name}")
        elif not _in_step(want, seen):
            remote = str(seen.get("id"))
            plan.writes.append(MapperWrite("update", name, remote, mapper_body(alias, want, remote)))
    return plan
