"""Version strings (seeds 002/004): the one module that builds, parses and compares them.

A version is `<image version>#<sha1 of the canonical spec>`. Everything else treats it as opaque text. SHA-1
is what the seed chose; it names a configuration, it protects nothing, so collision resistance against an
attacker is not needed. The slots in status rotate as: next is written before a change starts; when the
change has fully rolled out, last <- current <- next and next is cleared; on failure next stays.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from keycloak_operator.core.images import ImageParseError, parse_image
from keycloak_operator.models.keycloak import KeycloakSpec, Versions

SEPARATOR = "#"

# Fields that do not make a new version, with the reason. Every other field changes the hash (a guard test
# walks the model so a new field cannot be forgotten).
HASH_EXCLUDED_FIELDS: dict[str, str] = {
    "replicas": "scaling runs the same configuration on more or fewer pods; it is not a new version, and "
    "rolling back must not undo a scale change",
}


def canonical_spec(spec: KeycloakSpec) -> dict[str, Any]:
    """The spec with defaults applied, excluded fields removed: two specs that mean the same are equal."""
    data = spec.model_dump(mode="json", by_alias=False)
    for path in HASH_EXCLUDED_FIELDS:
        node = data
        *parents, leaf = path.split(".")
        for key in parents:
            node = node[key]
        node.pop(leaf, None)
    return data


def spec_hash(spec: KeycloakSpec) -> str:
    text = json.dumps(canonical_spec(spec), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()


def image_version(image: str) -> str:
    """The tag, the digest, or both as written; an unparseable reference is kept whole so it still differs."""
    ref = parse_image(image)
    if isinstance(ref, ImageParseError) or not ref.version:
        return image.replace(SEPARATOR, "_")
    return ref.version


@dataclass(frozen=True)
class Version:
    image_version: str
    spec_hash: str

    def format(self) -> str:
        return f"{self.image_version}{SEPARATOR}{self.spec_hash}"


def version_of(spec: KeycloakSpec) -> Version:
    return Version(image_version(spec.image), spec_hash(spec))


def parse_version(text: str) -> Version | None:
    if not isinstance(text, str) or text.count(SEPARATOR) != 1:
        return None
    image, digest = text.split(SEPARATOR)
    if not image or len(digest) != 40 or any(c not in "0123456789abcdef" for c in digest):
        return None
    return Version(image, digest)


def revision_key(version: str) -> str:
    """What names the stored spec of a version: its spec hash (any text that is not a version is hashed)."""
    parsed = parse_version(version)
    return parsed.spec_hash if parsed else hashlib.sha1(version.encode(), usedforsecurity=False).hexdigest()


# --- the three slots --------------------------------------------------------------------------------------


def begin(versions: Versions, new: str) -> Versions:
    """Record the version about to roll out, before any side effect. No-op when it already runs or is next."""
    if new == versions.current_version:
        # Reverted to what runs (or nothing changed): nothing is in flight any more.
        return versions.model_copy(update={"next_version": ""}) if versions.next_version else versions
    if new == versions.next_version:
        return versions
    return versions.model_copy(update={"next_version": new})


def complete(versions: Versions) -> Versions:
    """The next version has fully rolled out: it becomes current; the old current becomes the last good."""
    if not versions.next_version:
        return versions
    last = versions.current_version or versions.last_version
    return Versions(next_version="", current_version=versions.next_version, last_version=last)


def pending(versions: Versions) -> bool:
    return bool(versions.next_version) and versions.next_version != versions.current_version


def rollback_target(versions: Versions) -> str | None:
    """Undo the latest change: a change still in flight (or stuck) goes back to what runs; a change that
    completed goes back to the last known good version."""
    if pending(versions) and versions.current_version:
        return versions.current_version
    return versions.last_version or None
