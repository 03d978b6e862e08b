from hypothesis import given
from hypothesis import strategies as st

from keycloak_operator.core.common.merge_patch import merge_patch

json_leaf = st.one_of(st.integers(), st.text(max_size=5), st.booleans())
json_obj = st.recursive(
    st.dictionaries(st.text(max_size=3), json_leaf, max_size=4),
    lambda inner: st.dictionaries(st.text(max_size=3), st.one_of(json_leaf, inner), max_size=4),
    max_leaves=12,
)


def apply(target: dict, patch: dict) -> dict:
    out = dict(target)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict):
            out[key] = apply(out.get(key) if isinstance(out.get(key), dict) else {}, value)
        else:
            out[key] = value
    return out


@given(json_obj, json_obj)
def test_applying_the_patch_gives_the_new_document(old: dict, new: dict) -> None:
    assert apply(old, merge_patch(old, new)) == new


def test_equal_documents_give_an_empty_patch() -> None:
    doc = {"a": {"b": [1, 2]}, "c": "x"}
    assert merge_patch(doc, doc) == {}


def test_removed_keys_are_nulled() -> None:
    assert merge_patch({"a": 1, "b": {"c": 1}}, {"b": {}}) == {"a": None, "b": {"c": None}}
