"""Decides whether a child object must be written: the reason an idle reconcile makes zero writes.

Server-side apply is idempotent but still a write request. Instead of applying blindly, the operator compares
what it wants with what it observes: every field it sets must hold the value it wants. Fields the API server
or other controllers add (defaults, status, annotations) do not count, except under paths that Kubernetes
treats as atomic, where an extra key is a difference that apply would remove.
"""

from __future__ import annotations

from typing import Any

from keycloak_operator.core import scheduling

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
# key present but not wanted is a difference (the API server defaults none of them).
OWNED_OPTIONAL_KEYS: dict[tuple[str, ...], frozenset[str]] = {
    ("spec", "template", "spec"): scheduling.POD_SPEC_KEYS,
}

# Fields written only at creation or never compared (write-only data, owned identity).
_IGNORED_TOP = frozenset({"stringData"})


def needs_apply(desired: dict[str, Any], actual: dict[str, Any] | None) -> bool:
    if actual is None:
        return True
    return not _covers({k: v for k, v in desired.items() if k not in _IGNORED_TOP}, actual, ())


def _covers(want: Any, have: Any, path: tuple[str, ...]) -> bool:
    if isinstance(want, dict):
        if not isinstance(have, dict):
            return False
        if path in ATOMIC_PATHS and set(want) != set(have):
            return False
        if any(k in have and k not in want for k in OWNED_OPTIONAL_KEYS.get(path, ())):
            return False
        return all(k in have and _covers(v, have[k], (*path, k)) for k, v in want.items())
    if isinstance(want, list):
        if not isinstance(have, list) or len(want) != len(have):
            return False
        return all(_covers(w, h, path) for w, h in zip(want, have, strict=True))
    if isinstance(want, bool) or isinstance(have, bool):
        return want is have
    if isinstance(want, int | float) and isinstance(have, int | float):
        return want == have
    return bool(want == have)
