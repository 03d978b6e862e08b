"""The operator's permissions: no wildcards, only real verbs, and the README table says the same."""

from __future__ import annotations

import re
from pathlib import Path

from keycloak_operator.models.rbac import PERMISSIONS, rules

ROOT = Path(__file__).resolve().parents[3]
VERBS = {"get", "list", "watch", "create", "update", "patch", "delete"}


def test_no_wildcards_and_only_known_verbs() -> None:
    for p in PERMISSIONS:
        assert "*" not in p.group + p.resource and set(p.verbs) <= VERBS, p
        assert p.why


def test_each_resource_is_named_once_per_scope() -> None:
    keys = [(p.group, p.resource, p.scope) for p in PERMISSIONS]
    assert len(keys) == len(set(keys))


def test_rules_split_by_scope() -> None:
    total = len(rules("namespaced")) + len(rules("cluster")) + len(rules("restricted"))
    assert total == len(PERMISSIONS)


def test_the_readme_lists_every_permission_and_nothing_else() -> None:
    text = (ROOT / "README.md").read_text()
    rows = set()
    for line in text.splitlines():
        m = re.match(r"\| `([^`]*)` \| `([^`]+)` \| ([a-z, ]+) \|", line)
        if m:
            rows.add((m.group(1), m.group(2), tuple(v.strip() for v in m.group(3).split(","))))
    expected = {(p.group or "core", p.resource, p.verbs) for p in PERMISSIONS}
    assert rows == expected
