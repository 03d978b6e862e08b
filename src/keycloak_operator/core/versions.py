"""Version strings (seeds 002/004, ADR 0006): the one module that builds, parses and compares them.

A version is `<image version>#<sha1 of the canonical spec>`; everything else treats it as opaque text. SHA-1
is what the seed chose: it names a configuration and protects nothing, so an attacker's collisions do not
matter. The three slots in `status.versions` rotate as: next is written before a change starts; once it has
fully rolled out, last <- current <- next and next is cleared; on failure nothing rotates and next stays.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from keycloak_operator.core.images import ImageParseError, parse_image
from keycloak_operator.models.keycloak import KeycloakSpec
from keycloak_operator.models.upgrade_status import Versions

SEPARATOR = "#"
# Image versions for references that carry none: neither can be a tag or a digest (`<` is not allowed there).
UNTAGGED = "<untagged>"
INVALID_IMAGE = "<invalid>"
_HEX = frozenset("0123456789abcdef")
_HASH_LENGTH = 40

# A version names what the Keycloak pods run. These spec fields (wire paths) do not change that, so they are
# left out of the hash; `carry_unversioned` keeps their current values when a rollback restores an old spec.
# Every other field changes the hash: tests/unit/controller/test_versions.py walks the model, so none can be
# forgotten.
_ROLLOUT = "how the next change rolls out, not what runs; a rollback must not revert the policy either"
_BACKUP = "where and how the pre-upgrade snapshot is taken; Keycloak itself never sees it"
HASH_EXCLUDED_FIELDS: dict[str, str] = {
    "replicas": "scaling runs the same configuration on more or fewer pods; `kubectl scale` or an autoscaler "
    "must not rotate lastVersion (pushing out the real last good) and a rollback must not undo a scale",
    "upgradePolicy.strategy": _ROLLOUT,
    "upgradePolicy.autoTeardown": _ROLLOUT,
    "upgradePolicy.allowDowntime": _ROLLOUT,
    "upgradePolicy.greenReadyTimeout": _ROLLOUT,
    "upgradePolicy.backupTimeout": _ROLLOUT,
    "upgradePolicy.drainDelay": _ROLLOUT,
    "upgradePolicy.rolloutTimeout": _ROLLOUT + " (it is the Deployment's deadline, outside the pod template)",
    "database.managed.pvcName": _BACKUP,
    "database.managed.volumeSnapshotClassName": _BACKUP,
    "realmNamespaces": "who may declare realms is the operator's authorisation, not what runs; a rollback "
    "must never give back a namespace the right that was since revoked",
    "podDisruptionBudget": "how many pods a node drain may evict is a separate object, outside the pods; a "
    "rollback must not loosen or tighten it",
    "httpRoute": "the way in through a Gateway is a separate object in front of the public Service, as "
    "the Ingress is: changing it must not start an upgrade, and a rollback must not take it back",
    "ingress": "the way in is a separate object in front of the public Service, whose name never changes: "
    "changing it must not start an upgrade, and a rollback must not take the users' entrance back",
    "service": "the public Service is a separate object in front of the pods, whose name and selector the "
    "operator keeps: changing its type or metadata must not start an upgrade, nor a rollback undo it",
    "monitoring": "what scrapes the metrics is a separate object (and a port on the public Service), outside "
    "the pods; a rollback must not stop or start the monitoring",
    "networkPolicy": "who may reach the pods is separate objects, outside the pods; a rollback must never "
    "reopen what was since closed",
}


def is_excluded(path: str) -> bool:
    """Whether the field at `path` (dotted wire path) is left out of the hash, itself or with a parent."""
    parts = path.split(".")
    return any(".".join(parts[:n]) in HASH_EXCLUDED_FIELDS for n in range(1, len(parts) + 1))


# --- the spec hash ----------------------------------------------------------------------------------------


def canonical_json(spec: KeycloakSpec | Mapping[str, Any]) -> str:
    """What is hashed: the spec on the wire (camelCase) with defaults applied, nulls and excluded fields
    dropped, keys sorted, no white space. A raw dict is validated first (raises ValidationError)."""
    model = spec if isinstance(spec, KeycloakSpec) else KeycloakSpec.model_validate(spec)
    # Nulls dropped: a new optional field in a later operator release must not change every version.
    data = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    for path in HASH_EXCLUDED_FIELDS:
        *parents, leaf = path.split(".")
        node = _walk(data, parents)
        if node is not None:
            node.pop(leaf, None)
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def spec_hash(spec: KeycloakSpec | Mapping[str, Any]) -> str:
    return hashlib.sha1(canonical_json(spec).encode("utf-8"), usedforsecurity=False).hexdigest()


def _walk(data: Any, keys: list[str]) -> dict[str, Any] | None:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else None


# --- the version string -----------------------------------------------------------------------------------


def image_version(image: str) -> str:
    """The tag, `@digest` or `tag@digest` as written; a sentinel when there is none or it does not parse.
    A sentinel loses nothing: the image is hashed with the rest of the spec."""
    ref = parse_image(image)
    if isinstance(ref, ImageParseError):
        return INVALID_IMAGE
    return ref.version or UNTAGGED


def _valid_image_part(text: str) -> bool:
    return bool(text) and all(c.isprintable() and not c.isspace() and c != SEPARATOR for c in text)


def _valid_hash(text: str) -> bool:
    return len(text) == _HASH_LENGTH and all(c in _HEX for c in text)


@dataclass(frozen=True)
class Version:
    image_version: str
    spec_hash: str

    def __post_init__(self) -> None:
        # Only well-formed parts, so that format() and parse_version() are exact inverses.
        if not (_valid_image_part(self.image_version) and _valid_hash(self.spec_hash)):
            raise ValueError(f"not a version: {self.image_version!r}, {self.spec_hash!r}")

    def format(self) -> str:
        return f"{self.image_version}{SEPARATOR}{self.spec_hash}"


def version_of(spec: KeycloakSpec) -> Version:
    return Version(image_version(spec.image), spec_hash(spec))


def parse_version(text: object) -> Version | None:
    """The version in `text`, or None for anything else (empty slot, hand-edited status). Never raises."""
    if not isinstance(text, str):
        return None
    parts = text.split(SEPARATOR)
    if len(parts) != 2 or not (_valid_image_part(parts[0]) and _valid_hash(parts[1])):
        return None
    return Version(parts[0], parts[1])


def same_version(a: str, b: str) -> bool:
    """The spec hash is the identity (it covers the image too); the image part is a label for people."""
    pa, pb = parse_version(a), parse_version(b)
    if pa is None or pb is None:
        return a == b
    return pa.spec_hash == pb.spec_hash


def revision_key(version: str) -> str:
    """What names the stored spec of a version: its spec hash (text that is not a version is hashed)."""
    parsed = parse_version(version)
    return parsed.spec_hash if parsed else hashlib.sha1(version.encode(), usedforsecurity=False).hexdigest()


def carry_unversioned(restored: Mapping[str, Any], today: Mapping[str, Any]) -> dict[str, Any]:
    """A rollback restores a version: the restored spec, but every excluded field as it is today (where
    that field exists in both). Wire form in and out; raises ValidationError on an invalid spec."""
    out = KeycloakSpec.model_validate(restored).model_dump(mode="json", by_alias=True)
    now = KeycloakSpec.model_validate(today).model_dump(mode="json", by_alias=True)
    for path in HASH_EXCLUDED_FIELDS:
        *parents, leaf = path.split(".")
        target, source = _walk(out, parents), _walk(now, parents)
        if target is not None and source is not None:
            target[leaf] = source.get(leaf)
    return KeycloakSpec.model_validate(out).wire()


# --- the three slots --------------------------------------------------------------------------------------


def begin(versions: Versions, new: str) -> Versions:
    """Record the version about to roll out, before any side effect. Going back to what runs clears next
    (the change in flight is abandoned, it never becomes current or last); a retry changes nothing."""
    if not new:
        return versions
    if same_version(new, versions.current_version):
        return versions.model_copy(update={"next_version": "", "current_version": new})
    if new == versions.next_version:
        return versions
    return versions.model_copy(update={"next_version": new})


def complete(versions: Versions) -> Versions:
    """The next version has fully rolled out: last <- current <- next, next cleared. The first rollout
    leaves last as it was (empty): nothing good ran before."""
    if not versions.next_version:
        return versions
    if same_version(versions.next_version, versions.current_version):
        # Never rotate a version onto itself: that would overwrite the real last good.
        return versions.model_copy(update={"next_version": "", "current_version": versions.next_version})
    last = versions.current_version or versions.last_version
    return Versions(next_version="", current_version=versions.next_version, last_version=last)


def pending(versions: Versions) -> bool:
    return bool(versions.next_version) and not same_version(versions.next_version, versions.current_version)


def rollback_target(versions: Versions) -> str | None:
    """Undo the latest change: one still in flight (or stuck) goes back to what runs; one that completed
    goes back to the last known good. None when nothing earlier is recorded."""
    if pending(versions) and versions.current_version:
        return versions.current_version
    last = versions.last_version
    return last if last and not same_version(last, versions.current_version) else None
