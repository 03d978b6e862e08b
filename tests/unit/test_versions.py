import typing
from types import UnionType
from typing import Any, Literal, get_args, get_origin

from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from keycloak_operator.core import versions
from keycloak_operator.models.keycloak import KeycloakSpec, Versions

BASE = {"image": "quay.io/keycloak/keycloak:26.0.0", "database": {"cnpg": {"clusterName": "db"}}}


def spec(**kw: Any) -> KeycloakSpec:
    return KeycloakSpec.model_validate({**BASE, **kw})


def test_equal_meaning_equal_hash() -> None:
    explicit = spec(
        replicas=1,
        upgradePolicy={"strategy": "Recreate", "autoTeardown": True},
        env=[],
        cacheIsolation={"autoRevision": False},
    )
    assert versions.spec_hash(explicit) == versions.spec_hash(spec())
    reordered = KeycloakSpec.model_validate(
        {"database": {"cnpg": {"clusterName": "db"}}, "image": BASE["image"]}
    )
    assert versions.spec_hash(reordered) == versions.spec_hash(spec())


def test_format_and_parse_round_trip() -> None:
    v = versions.version_of(spec())
    assert v.format().startswith("26.0.0#") and len(v.spec_hash) == 40
    assert versions.parse_version(v.format()) == v


@given(
    st.from_regex(r"[A-Za-z0-9_.@:-]{1,40}", fullmatch=True), st.from_regex(r"[0-9a-f]{40}", fullmatch=True)
)
def test_parse_inverts_format(image: str, digest: str) -> None:
    v = versions.Version(image, digest)
    assert versions.parse_version(v.format()) == v


@given(st.text(max_size=80))
def test_parse_never_raises(text: str) -> None:
    versions.parse_version(text)


def test_image_version_tag_digest_or_both() -> None:
    d = "sha256:" + "e" * 64
    assert versions.image_version(f"kc:26.0.0@{d}") == f"26.0.0@{d}"
    assert versions.image_version(f"kc@{d}") == f"@{d}"
    assert versions.image_version("kc") == "kc"


def _candidates(annotation: Any, current: Any) -> list[Any]:
    """Values different from `current` for a field's type; the first the model accepts is used."""
    value = _value_for(annotation, current)
    return list(value) if isinstance(value, tuple) else [value]


def _value_for(annotation: Any, current: Any) -> Any:
    """A value different from `current` for a field's type (a tuple of candidates for strings)."""
    origin = get_origin(annotation)
    if origin in (typing.Union, UnionType):
        inner = next(a for a in get_args(annotation) if a is not type(None))
        return _value_for(inner, current)
    if origin is Literal:
        return next(v for v in get_args(annotation) if v != current)
    if origin is list:
        return (
            [*current, _sample_item(get_args(annotation)[0])]
            if current
            else [_sample_item(get_args(annotation)[0])]
        )
    if origin is dict:
        return {**(current or {}), "cpu": "1"}
    if annotation is bool:
        return not current
    if annotation is int:
        return (current or 0) + 1
    if annotation is str:
        return (f"1{current}", f"{current or 'x'}9", "changed")
    raise AssertionError(f"no generator for {annotation}")


def _sample_item(annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return {"name": "X_ITEM", "value": "v"}
    return "item"


def _leaf_paths(model: type[BaseModel], prefix: str = "") -> list[tuple[str, Any]]:
    paths = []
    for name, field in model.model_fields.items():
        annotation = field.annotation
        optional = get_origin(annotation) in (typing.Union, UnionType)
        target = next(a for a in get_args(annotation) if a is not type(None)) if optional else annotation
        if isinstance(target, type) and issubclass(target, BaseModel):
            paths.extend(_leaf_paths(target, f"{prefix}{name}."))
        else:
            paths.append((f"{prefix}{name}", annotation))
    return paths


def _changed_spec(path: str, annotation: Any) -> KeycloakSpec:
    """FULL with only `path` changed, to the first candidate value the model accepts."""
    data = KeycloakSpec.model_validate(FULL).model_dump()
    node = data
    *parents, leaf = path.split(".")
    for key in parents:
        node = node.setdefault(key, {})
    for candidate in _candidates(annotation, node.get(leaf)):
        node[leaf] = candidate
        try:
            return KeycloakSpec.model_validate(data)
        except ValueError:
            continue
    raise AssertionError(f"no valid changed value for {path}")


FULL = {
    "image": "quay.io/keycloak/keycloak:26.0.0",
    "database": {
        "cnpg": {"cluster_name": "db"},
        "managed": {"host": "h", "credentials_secret": {"name": "s"}},
        "external": {"host": "h", "credentials_secret": {"name": "s"}},
    },
    "admin_secret": {"name": "a"},
    "resources": {},
}


def test_guard_every_field_changes_the_hash_or_is_excluded() -> None:
    base = KeycloakSpec.model_validate(FULL).model_dump()
    base_hash = versions.spec_hash(KeycloakSpec.model_validate(base))
    checked = 0
    for path, annotation in _leaf_paths(KeycloakSpec):
        new_hash = versions.spec_hash(_changed_spec(path, annotation))
        if path in versions.HASH_EXCLUDED_FIELDS:
            assert new_hash == base_hash, f"{path} is excluded but changes the hash"
        else:
            assert new_hash != base_hash, f"{path} does not change the version hash: add it or exclude it"
        checked += 1
    assert checked >= 25


def test_every_exclusion_names_a_real_field_and_a_reason() -> None:
    real = {p for p, _ in _leaf_paths(KeycloakSpec)}
    for path, reason in versions.HASH_EXCLUDED_FIELDS.items():
        assert path in real and len(reason) > 20


def test_rotation() -> None:
    v = Versions()
    v = versions.begin(v, "a")
    assert (v.next_version, v.current_version, v.last_version) == ("a", "", "")
    v = versions.complete(v)
    assert (v.next_version, v.current_version, v.last_version) == ("", "a", "")
    assert versions.begin(v, "a") == v
    v = versions.complete(versions.begin(v, "b"))
    assert (v.next_version, v.current_version, v.last_version) == ("", "b", "a")
    assert versions.rollback_target(v) == "a"
    stuck = versions.begin(v, "c")
    assert versions.rollback_target(stuck) == "b"  # undo the change in flight: back to what runs


def test_failure_keeps_next_and_revert_clears_it() -> None:
    v = Versions(current_version="a", last_version="z")
    v = versions.begin(v, "b")
    assert versions.pending(v)
    assert versions.begin(v, "b") == v  # retried: unchanged
    reverted = versions.begin(v, "a")
    assert (reverted.next_version, reverted.current_version, reverted.last_version) == ("", "a", "z")
    assert versions.complete(Versions(current_version="a")) == Versions(current_version="a")
