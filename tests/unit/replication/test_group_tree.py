"""The group tree's cost and caps (core/replication/group_tree.py): paths are found once per group whatever
the tree's shape, a tree deeper than MAX_DEPTH and a namespace's groups beyond MAX_PER_NAMESPACE are Errors,
and planning makes a bounded number of passes. Complexity is asserted by counting, never by wall time."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

import pytest

from keycloak_operator.core.replication import ObjectKey, group_tree
from keycloak_operator.core.replication import group as gr
from keycloak_operator.core.replication.sync import Resource
from tests.unit.replication.test_group import hand_made, plan, resource


class Counting(Mapping[ObjectKey, Resource]):
    """The groups by key, counting each lookup a path computation makes."""

    def __init__(self, groups: list[Resource]) -> None:
        self.groups, self.lookups = {g.key: g for g in groups}, 0

    def __getitem__(self, key: ObjectKey) -> Resource:
        self.lookups += 1
        return self.groups[key]

    def __iter__(self) -> Iterator[ObjectKey]:
        return iter(self.groups)

    def __len__(self) -> int:
        return len(self.groups)


def chain(n: int, ns: str = "team-a") -> list[Resource]:
    return [resource(ns, "g0")] + [resource(ns, f"g{i}", parent=f"g{i - 1}") for i in range(1, n)]


@pytest.mark.parametrize("shape", ["chain", "chain reversed", "wide"])
def test_each_group_is_looked_up_a_bounded_number_of_times_whatever_the_shape(shape: str) -> None:
    n = 600
    if shape == "wide":
        groups = [resource(name="root")] + [resource(name=f"c{i}", parent="root") for i in range(n - 1)]
    else:
        groups = chain(n) if shape == "chain" else list(reversed(chain(n)))
    counting = Counting(groups)
    paths = group_tree.tree_paths(counting)
    assert len(paths) == n
    # Linear: each group is walked through once, plus the one lookup each walk stops at (3n, not n * depth).
    assert counting.lookups <= 3 * n


def test_a_tree_deeper_than_the_cap_is_an_error_naming_spec_parent_below_the_cap() -> None:
    groups = chain(group_tree.MAX_DEPTH + 3)
    paths = group_tree.tree_paths({g.key: g for g in groups})
    fine = [paths[g.key] for g in groups[: group_tree.MAX_DEPTH]]
    assert all(isinstance(p, str) for p in fine) and str(fine[-1]).count("/") == group_tree.MAX_DEPTH
    for g in groups[group_tree.MAX_DEPTH :]:
        verdict = paths[g.key]
        assert not isinstance(verdict, str)
        assert (verdict.phase, verdict.reason) == (
            "Error",
            "InvalidParent",
        ) and "spec.parent" in verdict.message


def test_a_cycle_found_from_below_names_the_cycle_and_holds_what_hangs_from_it() -> None:
    a, b = resource(name="a", parent="b"), resource(name="b", parent="a")
    c = resource(name="c", parent="a")
    paths = group_tree.tree_paths({g.key: g for g in (c, a, b)})
    for g in (a, b, c):
        verdict = paths[g.key]
        assert (
            not isinstance(verdict, str) and verdict.reason == "InvalidParent" and "cycle" in verdict.message
        )


def test_planning_a_deep_tree_held_at_its_root_makes_a_bounded_number_of_passes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = 0
    real = gr.plan_scope

    def counting(*a: Any, **kw: Any) -> Any:
        nonlocal calls
        calls += 1
        return real(*a, **kw)

    monkeypatch.setattr(gr, "plan_scope", counting)
    groups = chain(200)
    scope, _ = plan(groups, [hand_made("g0", "h0")])  # the root is a Conflict: each level waits
    assert calls <= group_tree.MAX_DEPTH + 2
    assert scope.plan.is_empty()
    assert all(scope.verdicts[g.key].phase != "Ready" for g in groups)


def test_a_namespace_declaring_more_groups_than_the_cap_gets_an_error_on_the_latest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(group_tree, "MAX_PER_NAMESPACE", 2)
    groups = [resource(name=f"g{i}", created=i) for i in range(3)]
    other = resource("team-b", "b0")
    going = replace(resource(name="old", created=-1), deleting=True)  # a group being deleted never counts
    scope, _ = plan([*reversed(groups), other, going], [])
    assert sorted(c.key.name for c in scope.plan.creates) == ["b0", "g0", "g1"]
    verdict = scope.verdicts[groups[2].key]
    assert (verdict.phase, verdict.reason) == ("Error", "TooManyGroups") and "team-a" in verdict.message
