"""The identity of a replicated object: the one definition of "the same object" (ADR 0005).

Consul's replicator compared config entries by (kind, name) while the store sorted them by (kind, name,
namespace); two same-named entries in two namespaces were then taken for one another and one was deleted and
restored forever. Here identity is the triple (kind, namespace, name), nothing else, and the dataclass
generates equality, hashing and the total order from exactly those fields in that order. `identity` spells
out the same tuple for dict indexes and sort keys; a unit test proves both agree and that no other field
takes part.
"""

from __future__ import annotations

from dataclasses import dataclass

Identity = tuple[str, str, str]


@dataclass(frozen=True, order=True, slots=True)
class ObjectKey:
    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"


def identity(key: ObjectKey) -> Identity:
    """The tuple that equality, hashing and order compare; the diff indexes and sorts by it."""
    return (key.kind, key.namespace, key.name)


def told_to(key: ObjectKey, reader: str) -> str:
    """How a message on a resource of namespace `reader` names another resource: in full within the reader's
    own namespace; from another namespace only by kind, so that one namespace's statuses and events never
    tell it the names of another's objects (docs/adr/0012-tenant-isolation.md)."""
    if key.namespace == reader:
        return str(key)
    return f"a {key.kind} of another namespace"
