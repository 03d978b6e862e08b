"""Choosing the context and namespace from kubeconfig files as kubectl does (core/kubeconfig.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from keycloak_operator.core import kubeconfig


def doc(current: str | None = None, **contexts: dict) -> dict:
    clusters = {c.get("cluster", "c") for c in contexts.values()}
    out: dict = {
        "clusters": [{"name": c, "cluster": {"server": f"https://{c}:6443"}} for c in sorted(clusters)],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": n, "context": {"cluster": "c", "user": "u", **c}} for n, c in contexts.items()],
    }
    if current is not None:
        out["current-context"] = current
    return out


def test_the_current_context_and_its_namespace() -> None:
    merged = kubeconfig.merge([("a", doc("dev", dev={"namespace": "team-a"}, prod={}))])
    choice = kubeconfig.choose(merged, None, None)
    assert (choice.context, choice.namespace) == ("dev", "team-a")
    assert kubeconfig.server(merged, choice) == "https://c:6443"


def test_the_flag_beats_the_contexts_namespace_which_beats_default() -> None:
    merged = kubeconfig.merge([("a", doc("dev", dev={"namespace": "team-a"}, prod={}))])
    assert kubeconfig.choose(merged, None, "other").namespace == "other"
    assert kubeconfig.choose(merged, "prod", None).namespace == "default"


def test_an_unknown_context_names_those_defined() -> None:
    merged = kubeconfig.merge([("a", doc("dev", dev={}, prod={}))])
    with pytest.raises(kubeconfig.ContextError, match=r"'staging' is not in the kubeconfig.*dev, prod"):
        kubeconfig.choose(merged, "staging", None)


def test_no_current_context_asks_for_one() -> None:
    merged = kubeconfig.merge([("a", doc(None, dev={}))])
    with pytest.raises(kubeconfig.ContextError, match="no current-context is set: pass --context"):
        kubeconfig.choose(merged, None, None)


def test_a_context_whose_cluster_is_missing_is_a_context_error() -> None:
    merged = kubeconfig.merge([("a", doc("dev", dev={"cluster": "gone"}))])
    merged["clusters"].pop("gone")
    with pytest.raises(kubeconfig.ContextError, match="names cluster 'gone'"):
        kubeconfig.choose(merged, None, None)


def test_the_first_file_wins_for_names_and_the_current_context() -> None:
    first = doc("dev", dev={"namespace": "one"})
    second = doc("prod", dev={"namespace": "two"}, prod={})
    merged = kubeconfig.merge([("a", first), ("b", second)])
    choice = kubeconfig.choose(merged, None, None)
    assert (choice.context, choice.namespace) == ("dev", "one")
    assert kubeconfig.choose(merged, "prod", None).context == "prod"


def test_an_empty_file_is_nothing_and_a_later_one_sets_the_context() -> None:
    merged = kubeconfig.merge([("a", None), ("b", {"current-context": ""}), ("c", doc("dev", dev={}))])
    assert kubeconfig.choose(merged, None, None).context == "dev"


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ([1, 2], "a: not a kubeconfig"),
        ({"contexts": {"dev": {}}}, "a: contexts is not a list"),
        ({"contexts": [{"context": {}}]}, r"a: contexts\[0\] has no name"),
        ({"clusters": [{"name": "c", "cluster": "x"}]}, r"a: clusters\[0\] \(c\) is not a mapping"),
    ],
)
def test_a_malformed_file_names_where(bad: object, message: str) -> None:
    with pytest.raises(kubeconfig.KubeconfigError, match=message):
        kubeconfig.merge([("a", bad)])


names = st.text("abcdef", min_size=1, max_size=3)


@given(st.lists(st.tuples(names, names), min_size=1, max_size=6), st.one_of(st.none(), names))
def test_any_files_give_the_first_definition_or_a_context_error(
    entries: list[tuple[str, str]], wanted: str | None
) -> None:
    # One context per file, each with its own namespace: the first file defining a name decides it.
    docs = [(f"f{i}", doc(ctx, **{ctx: {"namespace": ns}})) for i, (ctx, ns) in enumerate(entries)]
    merged = kubeconfig.merge(docs)
    first = {}
    for ctx, ns in entries:
        first.setdefault(ctx, ns)
    name = wanted or entries[0][0]
    if name not in first:
        with pytest.raises(kubeconfig.ContextError):
            kubeconfig.choose(merged, wanted, None)
        return
    choice = kubeconfig.choose(merged, wanted, None)
    assert (choice.context, choice.namespace) == (name, first[name])
