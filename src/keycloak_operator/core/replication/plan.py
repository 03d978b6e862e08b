"""The entries a diff reads and the plan it produces (data only; `diff.py` decides)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.marker import content_hash


@dataclass(frozen=True, slots=True)
class Desired:
    """What a resource declares: the content to write and its hash."""

    key: ObjectKey
    content: Mapping[str, Any]
    content_hash: str

    @classmethod
    def of(cls, key: ObjectKey, content: Mapping[str, Any]) -> Desired:
        return cls(key, content, content_hash(content))


@dataclass(frozen=True, slots=True)
class Actual:
    """An object found in Keycloak with our marker: its id there and the hash its marker records."""

    key: ObjectKey
    remote_id: str
    content_hash: str


@dataclass(frozen=True, slots=True)
class Delete:
    key: ObjectKey
    remote_id: str


@dataclass(frozen=True, slots=True)
class Create:
    key: ObjectKey
    content: Mapping[str, Any]
    content_hash: str


@dataclass(frozen=True, slots=True)
class Update:
    key: ObjectKey
    remote_id: str
    content: Mapping[str, Any]
    content_hash: str
    previous_hash: str


Operation = Delete | Create | Update


@dataclass(frozen=True)
class Plan:
    """Writes for one round; each list sorted by key (deletes by key, then remote id).

    `deletes` remove objects no resource declares; `duplicates` remove extra copies of a key that is still
    declared (its survivor stays, and may be in `updates`). They are kept apart so that a key in `deletes`
    is never also created or updated.
    """

    deletes: list[Delete] = field(default_factory=list)
    duplicates: list[Delete] = field(default_factory=list)
    creates: list[Create] = field(default_factory=list)
    updates: list[Update] = field(default_factory=list)

    def is_empty(self) -> bool:
        return not (self.deletes or self.duplicates or self.creates or self.updates)

    def operations(self) -> list[Operation]:
        """Execution order: every removal before any upsert, so a freed natural key (a clientId) can be
        taken by a create or an update in the same round."""
        return [*self.deletes, *self.duplicates, *self.creates, *self.updates]
