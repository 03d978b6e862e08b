"""The marker: attributes the operator writes on each Keycloak object it creates, so it knows its own.

The marker names the owning resource (kind, namespace, name) and the hash of the content last written. Only
objects carrying a complete, well-formed marker are "ours"; anything else, including a half-written or
hand-edited marker, is left alone.

Attribute names use the prefix `kcop.dev.`, not `kcop.dev/`: Keycloak's strictest rule for attribute names
(the user-profile check, letters, digits, '.', '_' and '-') rejects '/', and one format must fit every object
type. Keycloak returns attribute values as a string (clients, realms) or a list of strings (groups, users);
both are read, and a list must hold exactly one value.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.kernel import names

PREFIX: Final = names.ATTRIBUTE_PREFIX
ATTR_KIND: Final = PREFIX + "kind"
ATTR_NAMESPACE: Final = PREFIX + "namespace"
ATTR_NAME: Final = PREFIX + "name"
ATTR_HASH: Final = PREFIX + "content-hash"
MARKER_ATTRIBUTES: Final = (ATTR_KIND, ATTR_NAMESPACE, ATTR_NAME, ATTR_HASH)

# What Kubernetes allows for each part (a Kind, a namespace label, an object name) and a sha256 hex digest.
_KIND = re.compile(r"[A-Za-z][A-Za-z0-9]{0,62}")
_NAMESPACE = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_NAME = re.compile(rf"{_LABEL}(\.{_LABEL})*")
_NAME_MAX = 253
_HASH = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True, slots=True)
class Marker:
    key: ObjectKey
    content_hash: str


def is_marker_attribute(name: str) -> bool:
    return name.startswith(PREFIX)


def valid_key(key: ObjectKey) -> bool:
    return bool(
        _KIND.fullmatch(key.kind)
        and _NAMESPACE.fullmatch(key.namespace)
        and len(key.name) <= _NAME_MAX
        and _NAME.fullmatch(key.name)
    )


def marker_attributes(key: ObjectKey, content_hash: str) -> dict[str, str]:
    # Refuse to write what read_marker would reject: such an object could never be recognised, so the next
    # round would create it again.
    if not valid_key(key):
        raise ValueError(f"not a valid object key for a marker: {key!r}")
    if not _HASH.fullmatch(content_hash):
        raise ValueError(f"not a sha256 hex digest: {content_hash!r}")
    return {ATTR_KIND: key.kind, ATTR_NAMESPACE: key.namespace, ATTR_NAME: key.name, ATTR_HASH: content_hash}


def read_marker(attributes: Mapping[str, Any] | None) -> Marker | None:
    """The marker in a Keycloak object's attributes, or None when the object is not ours."""
    if not isinstance(attributes, Mapping):
        return None
    values = [_single(attributes.get(name)) for name in MARKER_ATTRIBUTES]
    kind, namespace, name, digest = values
    if kind is None or namespace is None or name is None or digest is None:
        return None
    key = ObjectKey(kind, namespace, name)
    if not valid_key(key) or not _HASH.fullmatch(digest):
        return None
    return Marker(key, digest)


def _single(value: Any) -> str | None:
    if isinstance(value, list | tuple):
        return value[0] if len(value) == 1 and isinstance(value[0], str) else None
    return value if isinstance(value, str) else None


def string_attributes(attributes: Any) -> dict[str, str]:
    """Realm attributes as plain strings (Keycloak lists strings; a one-element list, as `read_marker`
    accepts, is unwrapped, so a write built from a listing keeps the marker whichever shape it came in);
    anything else is left out."""
    if not isinstance(attributes, Mapping):
        return {}
    return {str(k): s for k, v in attributes.items() if (s := _single(v)) is not None}


def strip_marker(content: Mapping[str, Any]) -> dict[str, Any]:
    """The content without marker attributes (top level or under `attributes`); an empty map means none."""
    out = {k: v for k, v in content.items() if not is_marker_attribute(k)}
    attributes = out.get("attributes")
    if isinstance(attributes, Mapping):
        kept = {k: v for k, v in attributes.items() if not is_marker_attribute(k)}
        if kept:
            out["attributes"] = kept
        else:
            del out["attributes"]
    return out


def canonical_json(content: Mapping[str, Any]) -> str:
    return json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def content_hash(desired: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of the content, marker excluded (the marker holds this very hash)."""
    return hashlib.sha256(canonical_json(strip_marker(desired)).encode()).hexdigest()


def marked(content: Mapping[str, Any], key: ObjectKey) -> dict[str, Any]:
    """The representation to send to Keycloak: the content with its marker merged into `attributes`."""
    out = strip_marker(content)
    attributes = out.get("attributes")
    merged: dict[str, Any] = dict(attributes) if isinstance(attributes, Mapping) else {}
    merged.update(marker_attributes(key, content_hash(content)))
    out["attributes"] = merged
    return out
