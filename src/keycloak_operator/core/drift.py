"""Decides whether a child object must be written: the reason an idle reconcile makes zero writes.

Server-side apply is idempotent but still a write request. Instead of applying blindly, the operator compares
what it wants with what it observes: every field it sets must hold the value it wants. Fields the API server
or other controllers add (defaults, status, annotations) do not count, except under paths that Kubernetes
treats as atomic, where an extra key is a difference that apply would remove.
"""

from __future__ import annotations

from typing import Any

from keycloak_operator.core import children, scheduling
from keycloak_operator.kernel import names

# Paths (tuples of keys; list indexes are skipped) whose value must match exactly.
ATOMIC_PATHS: frozenset[tuple[str, ...]] = frozenset(
    {
        ("spec", "selector"),  # Service selectors are atomic maps: apply replaces them whole.
        ("spec", "selector", "matchLabels"),
        # The operator owns every pod label; a label it stopped setting must go, or it would keep the pod
        # in a cache cluster it left.
        ("spec", "template", "metadata", "labels"),
    }
)

# Optional keys the operator sets under a path, and so must remove when it no longer wants them: there, a
# key present but not wanted is a difference, when the operator's own field manager owns it (a key another
# writer added, `kubectl edit` or a mutating webhook, is theirs: apply would not remove it anyway).
_SELECTOR = frozenset({"matchLabels", "matchExpressions"})
OWNED_OPTIONAL_KEYS: dict[tuple[str, ...], frozenset[str]] = {
    # Init containers and volumes: the last truststore or extension taken out leaves nothing else changed.
    # (Keys inside a container cannot be listed here: containers are a keyed list, which managedFields
    # records by name, not as one owned value. A spec change that removes one is a new version anyway,
    # whose annotation on the Deployment differs.)
    ("spec", "template", "spec"): scheduling.POD_SPEC_KEYS
    | children.POD_SPEC_KEYS
    | {"initContainers", "volumes"},
    ("spec", "template", "spec", "securityContext"): children.POD_SECURITY_KEYS,
    # The Ingress: its optional parts, and those of its rules' and TLS entries (atomic lists: the
    # operator owns each item whole).
    ("spec",): frozenset({"ingressClassName", "tls"}),
    ("spec", "rules"): frozenset({"host"}),
    ("spec", "tls"): frozenset({"hosts", "secretName"}),
    # A NetworkPolicy peer's parts.
    ("spec", "ingress", "from"): frozenset({"podSelector", "namespaceSelector", "ipBlock"}),
    ("spec", "ingress", "from", "podSelector"): _SELECTOR,
    ("spec", "ingress", "from", "namespaceSelector"): _SELECTOR,
    ("spec", "ingress", "from", "ipBlock"): frozenset({"except"}),
    # A ServiceMonitor endpoint's TLS settings.
    ("spec", "endpoints"): frozenset({"tlsConfig"}),
    # An HTTPRoute's Gateway listener (its parentRefs are an atomic list: each item owned whole).
    ("spec", "parentRefs"): frozenset({"sectionName"}),
}

# Maps whose every key the operator sets may go: a label or annotation the operator set and no longer wants
# (one a user removed from spec.ingress.annotations, say) is a difference when its field manager owns it.
OWNED_MAPS: frozenset[tuple[str, ...]] = frozenset(
    {
        ("metadata", "labels"),
        ("metadata", "annotations"),
        # spec.podMetadata.annotations; an annotation another writer added (kubectl's restartedAt) is theirs.
        ("spec", "template", "metadata", "annotations"),
    }
)

# Fields written only at creation or never compared (write-only data, owned identity).
_IGNORED_TOP = frozenset({"stringData"})


def needs_apply(desired: dict[str, Any], actual: dict[str, Any] | None) -> bool:
    if actual is None:
        return True
    owned = _owned_fields(actual)
    return not _covers({k: v for k, v in desired.items() if k not in _IGNORED_TOP}, actual, (), owned)


def _owned_fields(actual: dict[str, Any]) -> dict[str, Any]:
    """The fieldsV1 tree of what the operator's own field manager applied (managedFields)."""
    for entry in actual.get("metadata", {}).get("managedFields", []) or []:
        if entry.get("manager") == names.FIELD_MANAGER and entry.get("operation") == "Apply":
            return dict(entry.get("fieldsV1") or {})
    return {}


def _owns(owned: dict[str, Any], path: tuple[str, ...]) -> bool:
    """Whether the manager owns the field at `path`. An empty entry on the way is a value owned whole (an
    atomic list, such as an Ingress's rules or a NetworkPolicy's ingress): everything inside it is owned."""
    node: Any = owned
    for depth, key in enumerate(path):
        node = node.get(f"f:{key}") if isinstance(node, dict) else None
        if node is None:
            return False
        if node == {} and depth < len(path) - 1:
            return True
    return True


def _empty(value: Any) -> bool:
    """What the API server stores as absent (omitempty): a wanted empty value matches a missing key."""
    return value is None or value == "" or value == [] or value == {}


def _covers(want: Any, have: Any, path: tuple[str, ...], owned: dict[str, Any]) -> bool:
    if isinstance(want, dict):
        if not isinstance(have, dict):
            return False
        if path in ATOMIC_PATHS and set(want) != set(have):
            return False
        optional = have if path in OWNED_MAPS else OWNED_OPTIONAL_KEYS.get(path, ())
        stale = (k for k in optional if k in have and k not in want)
        if any(_owns(owned, (*path, k)) for k in stale):
            return False
        # A whole owned map no longer wanted (every annotation taken out): its keys are stale too.
        gone = (k for k in have if k not in want and (*path, k) in OWNED_MAPS)
        if any(not _covers({}, have[k], (*path, k), owned) for k in gone):
            return False
        return all(
            _covers(v, have[k], (*path, k), owned) if k in have else _empty(v) for k, v in want.items()
        )
    if isinstance(want, list):
        if not isinstance(have, list) or len(want) != len(have):
            return False
        return all(_covers(w, h, path, owned) for w, h in zip(want, have, strict=True))
    if isinstance(want, bool) or isinstance(have, bool):
        return want is have
    if isinstance(want, int | float) and isinstance(have, int | float):
        return want == have
    return bool(want == have)
