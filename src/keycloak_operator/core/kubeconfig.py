"""Which cluster, user and namespace the command-line tools (`status`, `plan`, `rollback`) talk to, chosen
from the user's kubeconfig files the way kubectl chooses: files merged in order, the first to define a named
cluster, user or context winning, and the first to set `current-context` naming the default context; `-n`
beats the context's namespace, which beats `default`. Pure: the shell reads the files and hands their YAML in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

DEFAULT_NAMESPACE = "default"
_SECTIONS = ("clusters", "users", "contexts")


class KubeconfigError(ValueError):
    """The kubeconfig cannot be used as it is (not a mapping, a malformed entry); the message says where."""


class ContextError(KubeconfigError):
    """The context asked for (or the current one) is not defined, or names a cluster the files lack."""


@dataclass(frozen=True)
class Choice:
    context: str
    cluster: str
    namespace: str


def _entries(doc: Mapping[str, Any], section: str, source: str) -> list[tuple[str, Mapping[str, Any]]]:
    raw = doc.get(section) or []
    if not isinstance(raw, list):
        raise KubeconfigError(f"{source}: {section} is not a list")
    found = []
    for i, entry in enumerate(raw):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
            raise KubeconfigError(f"{source}: {section}[{i}] has no name")
        body = entry.get(section[:-1]) or {}
        if not isinstance(body, Mapping):
            raise KubeconfigError(f"{source}: {section}[{i}] ({entry['name']}) is not a mapping")
        found.append((entry["name"], body))
    return found


def merge(docs: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    """(source, parsed YAML) in the order kubectl reads them, into one kubeconfig: each section a dict by
    name, the first definition of a name kept, and the first `current-context` set. An empty file counts as
    nothing, as for kubectl."""
    merged: dict[str, Any] = {section: {} for section in _SECTIONS}
    merged["current-context"] = ""
    for source, doc in docs:
        if doc is None:
            continue
        if not isinstance(doc, Mapping):
            raise KubeconfigError(f"{source}: not a kubeconfig (a YAML mapping)")
        for section in _SECTIONS:
            for name, body in _entries(doc, section, source):
                merged[section].setdefault(name, body)
        current = doc.get("current-context")
        if isinstance(current, str) and current and not merged["current-context"]:
            merged["current-context"] = current
    return merged


def choose(merged: Mapping[str, Any], context: str | None, namespace: str | None) -> Choice:
    """The context to use (`context`, else the current one), and the namespace (`namespace`, else the
    context's, else `default`). ContextError when it cannot be used, naming what is defined."""
    contexts: Mapping[str, Mapping[str, Any]] = merged["contexts"]
    name = context or merged["current-context"]
    known = ", ".join(sorted(contexts)) or "none"
    if not name:
        raise ContextError(f"no current-context is set: pass --context (contexts defined: {known})")
    if name not in contexts:
        raise ContextError(f"context {name!r} is not in the kubeconfig (contexts defined: {known})")
    body = contexts[name]
    cluster = body.get("cluster")
    if not isinstance(cluster, str) or cluster not in merged["clusters"]:
        raise ContextError(
            f"context {name!r} names cluster {cluster!r}, which the kubeconfig does not define"
        )
    own = body.get("namespace")
    chosen = namespace or (own if isinstance(own, str) and own else DEFAULT_NAMESPACE)
    return Choice(context=name, cluster=cluster, namespace=chosen)


def server(merged: Mapping[str, Any], choice: Choice) -> str:
    """The API server's URL the chosen context's cluster names ('' if none: the client refuses it)."""
    url = merged["clusters"][choice.cluster].get("server")
    return url if isinstance(url, str) else ""
