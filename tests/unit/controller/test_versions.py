import copy
import typing
from types import UnionType
from typing import Annotated, Any, Literal, TypeGuard, get_args, get_origin

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic.fields import FieldInfo

from keycloak_operator.core import children, versions
from keycloak_operator.core.deployment import render_deployment
from keycloak_operator.models.keycloak import KeycloakSpec
from keycloak_operator.models.upgrade_status import Versions

IMAGE = "quay.io/keycloak/keycloak:26.0.0"
BASE = {"image": IMAGE, "database": {"cnpg": {"clusterName": "db"}}}
DIGEST = "sha256:" + "e" * 64


def spec(**kw: Any) -> KeycloakSpec:
    return KeycloakSpec.model_validate({**BASE, **kw})


def stored_before_the_reference_rule(image: str) -> KeycloakSpec:
    """A spec whose image the CRD refuses today (kernel/patterns.py IMAGE_REFERENCE): an object stored
    before that rule still has a version, and the core never raises on it."""
    return spec().model_copy(update={"image": image})


# --- canonical hashing ------------------------------------------------------------------------------------


def test_explicit_defaults_hash_like_omitted_ones() -> None:
    explicit = spec(
        upgradePolicy={"strategy": "Recreate", "autoTeardown": True, "drainDelay": "10s"},
        env=[],
        cacheIsolation={"autoRevision": False, "autoSuffix": False, "clusterName": None},
        database={"cnpg": {"clusterName": "db", "database": "app"}, "managed": None},
        adminSecret=None,
    )
    assert versions.spec_hash(explicit) == versions.spec_hash(spec())


def test_key_order_spelling_and_raw_dicts_do_not_matter() -> None:
    reordered = {"database": {"cnpg": {"clusterName": "db"}}, "image": IMAGE}
    snake = {"image": IMAGE, "database": {"cnpg": {"cluster_name": "db"}}}
    assert versions.spec_hash(reordered) == versions.spec_hash(snake) == versions.spec_hash(spec())


def test_status_metadata_and_unknown_keys_are_not_part_of_the_spec() -> None:
    noisy = {**BASE, "status": {"phase": "Running"}, "metadata": {"generation": 7}, "unknown": 1}
    assert versions.spec_hash(noisy) == versions.spec_hash(spec())


def test_canonical_form_is_wire_json_without_white_space() -> None:
    text = versions.canonical_json(spec())
    assert '"cacheIsolation":{' in text and " " not in text and "replicas" not in text
    assert len(versions.spec_hash(spec())) == 40


def test_list_order_is_meaning() -> None:
    a, b = {"name": "A", "value": "1"}, {"name": "B", "value": "$(A)"}
    assert versions.spec_hash(spec(env=[a, b])) != versions.spec_hash(spec(env=[b, a]))


def test_an_invalid_raw_spec_is_refused() -> None:
    with pytest.raises(ValidationError):
        versions.spec_hash({"image": ""})


# --- the version string -----------------------------------------------------------------------------------


def test_version_of_a_spec() -> None:
    v = versions.version_of(spec())
    assert v.image_version == "26.0.0" and v.spec_hash == versions.spec_hash(spec())
    assert v.format() == f"26.0.0#{v.spec_hash}" and versions.parse_version(v.format()) == v


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        (IMAGE, "26.0.0"),
        (f"kc:26.0.0@{DIGEST}", f"26.0.0@{DIGEST}"),
        (f"kc@{DIGEST}", f"@{DIGEST}"),
        ("localhost:5000/kc", versions.UNTAGGED),
        ("NotAnImage#x", versions.INVALID_IMAGE),
    ],
)
def test_image_version_tag_digest_or_both_as_written(image: str, expected: str) -> None:
    assert versions.image_version(image) == expected
    made = (
        spec(image=image) if expected != versions.INVALID_IMAGE else stored_before_the_reference_rule(image)
    )
    assert versions.parse_version(versions.version_of(made).format()) is not None


def test_unparseable_images_still_make_different_versions() -> None:
    a = versions.version_of(stored_before_the_reference_rule("Bad:1"))
    b = versions.version_of(stored_before_the_reference_rule("Bad:2"))
    assert a.image_version == b.image_version == versions.INVALID_IMAGE and a != b


IMAGE_PARTS = st.text(
    st.characters(blacklist_categories=("Z", "C"), blacklist_characters="#"), min_size=1, max_size=60
)
HASHES = st.from_regex(r"[0-9a-f]{40}", fullmatch=True)


@given(IMAGE_PARTS, HASHES)
def test_parse_inverts_format(image: str, digest: str) -> None:
    v = versions.Version(image, digest)
    assert versions.parse_version(v.format()) == v


@given(st.one_of(st.text(max_size=80), st.builds(lambda i, h, s: i + s + h, IMAGE_PARTS, HASHES, st.text())))
def test_parse_never_raises_and_format_inverts_parse(text: str) -> None:
    parsed = versions.parse_version(text)
    assert parsed is None or parsed.format() == text


@pytest.mark.parametrize(
    "text", ["", "#" + "a" * 40, "26#" + "a" * 39, "26#" + "A" * 40, "a#b#" + "a" * 40, "2 6#" + "a" * 40]
)
def test_malformed_versions_do_not_parse(text: str) -> None:
    assert versions.parse_version(text) is None


@pytest.mark.parametrize(("image", "digest"), [("", "a" * 40), ("a#b", "a" * 40), ("26", "a" * 39)])
def test_malformed_parts_are_not_a_version(image: str, digest: str) -> None:
    with pytest.raises(ValueError):
        versions.Version(image, digest)


def test_non_strings_do_not_parse() -> None:
    assert versions.parse_version(None) is None and versions.parse_version(42) is None


def test_same_version_is_the_spec_hash() -> None:
    h = "a" * 40
    assert versions.same_version(f"26.0.0#{h}", f"{versions.UNTAGGED}#{h}")
    assert not versions.same_version(f"26.0.0#{h}", f"26.0.0#{'b' * 40}")
    assert versions.same_version("", "") and not versions.same_version("", f"26.0.0#{h}")
    assert versions.same_version("junk", "junk") and not versions.same_version("junk", "junk2")


def test_revision_key() -> None:
    assert versions.revision_key("26.0.0#" + "c" * 40) == "c" * 40
    assert len(versions.revision_key("junk")) == 40


# --- the three slots --------------------------------------------------------------------------------------

A, B, C, D = (f"{tag}#{h * 40}" for tag, h in (("26.0.0", "a"), ("26.0.1", "b"), ("27.0.0", "c"), ("x", "d")))


def slots(v: Versions) -> tuple[str, str, str]:
    return v.next_version, v.current_version, v.last_version


def test_first_rollout_leaves_last_empty() -> None:
    v = versions.begin(Versions(), A)
    assert slots(v) == (A, "", "") and versions.pending(v)
    v = versions.complete(v)
    assert slots(v) == ("", A, "") and not versions.pending(v)
    assert versions.rollback_target(v) is None


def test_rotation_walks_next_current_last() -> None:
    v = versions.complete(versions.begin(Versions(current_version=A), B))
    assert slots(v) == ("", B, A) and versions.rollback_target(v) == A
    v = versions.complete(versions.begin(v, C))
    assert slots(v) == ("", C, B)


def test_begin_is_a_no_op_for_what_runs_and_for_a_retry() -> None:
    v = Versions(current_version=A, last_version=D)
    assert versions.begin(v, A) == v and versions.begin(v, "") == v
    started = versions.begin(v, B)
    assert versions.begin(started, B) == started


def test_failure_keeps_next_and_a_stuck_change_rolls_back_to_what_runs() -> None:
    stuck = versions.begin(Versions(current_version=A, last_version=D), B)
    # Failure is the absence of complete(): nothing rotates, next stays for the resume and for people.
    assert slots(stuck) == (B, A, D) and versions.pending(stuck)
    assert versions.rollback_target(stuck) == A
    reverted = versions.begin(stuck, A)
    assert slots(reverted) == ("", A, D) and not versions.pending(reverted)


def test_a_change_replaced_in_flight_never_becomes_last() -> None:
    v = versions.begin(versions.begin(Versions(current_version=A), B), C)
    assert slots(versions.complete(v)) == ("", C, A)


def test_complete_without_next_or_onto_itself_keeps_last() -> None:
    v = Versions(current_version=A, last_version=D)
    assert versions.complete(v) == v
    assert slots(versions.complete(Versions(next_version=A, current_version=A, last_version=D))) == ("", A, D)


def test_rollback_target_is_none_when_it_would_change_nothing() -> None:
    assert versions.rollback_target(Versions()) is None
    assert versions.rollback_target(Versions(current_version=A, last_version=A)) is None
    assert versions.rollback_target(Versions(next_version=A)) is None


OPS = st.lists(st.one_of(st.sampled_from([A, B, C, D]), st.just("complete")), max_size=30)


@given(OPS)
def test_slot_invariants_over_any_sequence(ops: list[str]) -> None:
    v, ever_current = Versions(), {""}
    for op in ops:
        before = v
        if op == "complete":
            v = versions.complete(v)
            assert v.next_version == "" and versions.complete(v) == v
            if before.next_version:
                assert v.current_version == before.next_version
        else:
            v = versions.begin(v, op)
            assert versions.begin(v, op) == v and v.current_version == before.current_version
            assert v.next_version == ("" if op == v.current_version else op)
        assert v.last_version in ever_current and versions.pending(v) == bool(v.next_version)
        ever_current.add(v.current_version)


# --- the guard: every spec field changes the hash or is excluded with a reason ----------------------------


class SpecField(typing.NamedTuple):
    path: str  # wire path; `env[].name` is a field of every list item
    keys: tuple[str | int, ...]  # where it sits in a wire dict
    info: FieldInfo
    model: type[BaseModel] | None  # set for nested models


def _inner(annotation: Any) -> Any:
    if get_origin(annotation) in (typing.Union, UnionType):
        return next(a for a in get_args(annotation) if a is not type(None))
    return annotation


def _is_model(t: Any) -> TypeGuard[type[BaseModel]]:
    return isinstance(t, type) and issubclass(t, BaseModel)


def _fields(model: type[BaseModel], path: str = "", keys: tuple[str | int, ...] = ()) -> list[SpecField]:
    out = []
    for name, info in model.model_fields.items():
        alias, t = info.alias or name, _inner(info.annotation)
        here, at = f"{path}{alias}", (*keys, alias)
        item = get_args(t)[0] if get_origin(t) is list else None
        if _is_model(t):
            out += [SpecField(here, at, info, t), *_fields(t, f"{here}.", at)]
        elif _is_model(item):
            out += [SpecField(here, at, info, None), *_fields(item, f"{here}[].", (*at, 0))]
        else:
            out.append(SpecField(here, at, info, None))
    return out


LEAVES = [f for f in _fields(KeycloakSpec) if f.model is None]


def _candidates(annotation: Any, current: Any) -> list[Any]:
    """Values of the type, different from `current`; teach it a new type when the model grows one."""
    t = _inner(annotation)
    origin, args = get_origin(t), get_args(t)
    if origin is Annotated:  # a constrained item type (a namespace, a quantity): the values it accepts
        adapter: TypeAdapter[Any] = TypeAdapter(t)
        extra = ["1", "2Gi", "-Xss1m"]  # a number, a quantity, a JVM option
        return [v for v in [*_candidates(args[0], current), *extra] if _accepts(adapter, v)]
    if origin is Literal:
        return list(args)
    if t is bool:
        return [not current] if isinstance(current, bool) else [True, False]
    if t is int:
        return [current + 1, current - 1] if isinstance(current, int) else [1, 0, 2]
    if t is str:
        urls_addresses_and_paths = ["https://a.example", "10.0.0.0/8", "10.1.0.0/16", "/a"]
        return [
            *([f"1{current}", f"{current}1"] if isinstance(current, str) else []),
            "x",
            "a1",
            "1s",
            *urls_addresses_and_paths,
            "1Gi",  # a quantity (an emptyDir's sizeLimit)
        ]
    if origin is list:
        now = current if isinstance(current, list) else []
        if _is_model(args[0]):
            item = _valid_example(args[0])
            if now and "name" in item:  # lists keyed by name (env, additionalOptions) hold each name once
                item["name"] = f"{item['name']}{len(now)}"
            if now and "mountPath" in item:  # and volumes each path once
                item["mountPath"] = f"{item['mountPath']}{len(now)}"
            return [[*now, item]]
        return [[*now, item] for item in _candidates(args[0], None)[:3]]
    if t is Any:  # a free-form part of a Kubernetes type (an affinity term): any JSON value
        return [{"weight": len(str(current))}]
    if origin is dict:
        now = current if isinstance(current, dict) else {}
        key = ("cpu", "memory", "ephemeral-storage", "example.com/gpu")[len(now) % 4]  # resource names
        # And a pod spec key the escape hatch takes (models/unsupported.py), with a string value.
        hatch = {**now, "schedulerName": f"s{len(now)}"}
        return [hatch, {**now, key: _candidates(args[1], None)[0]}]
    raise AssertionError(f"the guard test has no values for {annotation}: teach _candidates")


def _accepts(adapter: TypeAdapter[Any], value: Any) -> bool:
    try:
        adapter.validate_python(value)
    except ValidationError:
        return False
    return True


def _valid_values(info: FieldInfo, current: Any) -> list[Any]:
    constrained: Any = Annotated[info.annotation, *info.metadata] if info.metadata else info.annotation
    adapter: TypeAdapter[Any] = TypeAdapter(constrained)
    out = []
    for value in _candidates(info.annotation, current):
        try:
            adapter.validate_python(value)
        except ValidationError:
            continue
        if value != current:
            out.append(value)
    return out


def _example(model: type[BaseModel]) -> dict[str, Any]:
    """Every field of `model` set, optional nested models included, so every leaf has a value to change."""
    out: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        t = _inner(info.annotation)
        out[info.alias or name] = _example(t) if _is_model(t) else _valid_values(info, None)[0]
    return out


def _valid_example(model: type[BaseModel]) -> dict[str, Any]:
    """`_example`, less optional fields a cross-field rule forbids together (value or secret), in order."""
    out = _example(model)
    for name, info in model.model_fields.items():
        if _accepts(TypeAdapter(model), out):
            break
        if not info.is_required():
            out.pop(info.alias or name, None)
    return out


FULL = _example(KeycloakSpec)  # all three database tiers too: the model leaves "exactly one" to the CRD
FULL["hostname"]["hostname"] = "https://sso.example"  # backchannelDynamic (set) needs a full URL
FULL["features"]["disabled"] = ["zz"]  # not also enabled
for _tier in ("managed", "external"):  # sslRootCert (set) needs a verifying mode
    FULL["database"][_tier]["tls"]["sslMode"] = "verify-full"


def _get(data: Any, keys: tuple[str | int, ...]) -> Any:
    for key in keys:
        data = data[key]
    return data


def _lookup(data: Any, keys: tuple[str | int, ...]) -> Any:
    """The value at `keys`, None where the path does not exist."""
    try:
        return _get(data, keys)
    except (KeyError, IndexError, TypeError):
        return None


def _with(keys: tuple[str | int, ...], value: Any, base: dict[str, Any] = FULL) -> dict[str, Any]:
    """A copy of `base` with `value` at `keys`, parents created as needed (defaults fill the rest)."""
    data = copy.deepcopy(base)
    node: Any = data
    for key in keys[:-1]:
        node = node.setdefault(key, {}) if isinstance(key, str) else node[key]
    node[keys[-1]] = value
    return data


def _changed_specs(field: SpecField, base: dict[str, Any] = FULL) -> list[KeycloakSpec]:
    out = []
    for start in _bases_for(field, base):
        for value in _valid_values(field.info, _lookup(start, field.keys)):
            try:
                out.append(KeycloakSpec.model_validate(_with(field.keys, value, start)))
            except ValidationError:
                continue
        if out:
            break
    assert out, f"no valid changed value for {field.path}"
    return out


def _bases_for(field: SpecField, base: dict[str, Any]) -> list[dict[str, Any]]:
    """`base`, then `base` with one sibling dropped from the list item the field is in: a field that excludes
    another (an option's secret and its value) can only change where the other is absent."""
    out = [base]
    index = next((i for i, k in enumerate(field.keys) if isinstance(k, int)), None)
    if index is None or index + 1 >= len(field.keys):
        return out
    item = _lookup(base, field.keys[: index + 1])
    for sibling in item if isinstance(item, dict) else {}:
        if sibling != field.keys[index + 1]:
            trimmed = copy.deepcopy(base)
            _get(trimmed, field.keys[: index + 1]).pop(sibling)
            out.append(trimmed)
    # The item with the field's own part alone (a valid example of it, when it is an object): a part that
    # excludes every sibling (a NetworkPolicy peer's ipBlock) can only change there.
    if isinstance(item, dict):
        own = field.keys[: index + 2]
        part = next((f for f in _fields(KeycloakSpec) if f.keys == own), None)
        alone = copy.deepcopy(base)
        model = part.model if part is not None else None
        value = _valid_example(model) if model else copy.deepcopy(item.get(own[-1]))
        _get(alone, field.keys[:index])[field.keys[index]] = {own[-1]: value}
        out.append(alone)
        out.append(_branch_alone(field, base, index))
    return out


def _branch_alone(field: SpecField, base: dict[str, Any], index: int) -> dict[str, Any]:
    """`base` with, at every level from the list item down to the field, only the required keys and the
    one the field is under (made when missing): a choice nested deeper (an env entry's valueFrom, a Secret
    key or a ConfigMap key, which FULL leaves out for its value) can only change there."""
    trimmed = copy.deepcopy(base)
    by_keys = {f.keys: f for f in _fields(KeycloakSpec)}
    for depth in range(index + 1, len(field.keys)):
        node = _lookup(trimmed, field.keys[:depth])
        if depth == index + 1:  # the list item: its model is the list's item type
            listed = by_keys[field.keys[:index]]
            model: Any = get_args(_inner(listed.info.annotation))[0]
        else:
            model = by_keys[field.keys[:depth]].model
        if not isinstance(node, dict) or not _is_model(model):
            break
        required = {i.alias or n for n, i in model.model_fields.items() if i.is_required()}
        for key in [k for k in node if k != field.keys[depth] and k not in required]:
            node.pop(key)
        branch = by_keys[field.keys[: depth + 1]].model
        if field.keys[depth] not in node and branch is not None:  # a branch FULL had to leave out
            node[field.keys[depth]] = _valid_example(branch)
    return trimmed


def test_the_walk_sees_nested_models_and_list_items() -> None:
    paths = {f.path for f in LEAVES}
    expected = {"image", "replicas", "database.cnpg.clusterName", "env[].value", "upgradePolicy.drainDelay"}
    assert expected | {"resources.limits", "adminSecret.name", "database.managed.pvcName"} <= paths


@pytest.mark.parametrize("field", LEAVES, ids=[f.path for f in LEAVES])
def test_guard_every_field_changes_the_hash_or_is_excluded(field: SpecField) -> None:
    base = KeycloakSpec.model_validate(FULL)
    for changed in _changed_specs(field):
        # The change is real (not normalised away by the model) before the hash is asked about it.
        assert _lookup(changed.wire(), field.keys) != _lookup(base.wire(), field.keys)
        if versions.is_excluded(field.path):
            assert versions.spec_hash(changed) == versions.spec_hash(base), f"{field.path} is excluded"
        else:
            assert versions.spec_hash(changed) != versions.spec_hash(base), (
                f"spec.{field.path} does not change the version: hash it, or add it to HASH_EXCLUDED_FIELDS "
                "with the reason"
            )


OPTIONAL = [f for f in _fields(KeycloakSpec) if "[]" not in f.path and not f.info.is_required()]
# Clearing a field a sibling needs changes the sibling too: a verifying sslMode needs sslRootCert.
CLEARED_WITH = {f"database.{t}.tls.sslRootCert": ("sslMode", "require") for t in ("managed", "external")}


@pytest.mark.parametrize("field", OPTIONAL, ids=[f.path for f in OPTIONAL])
def test_guard_clearing_an_optional_field(field: SpecField) -> None:
    """Unset (back to its default) is a different value too."""
    cleared = copy.deepcopy(FULL)
    del _get(cleared, field.keys[:-1])[field.keys[-1]]
    if field.path in CLEARED_WITH:
        sibling, value = CLEARED_WITH[field.path]
        _get(cleared, field.keys[:-1])[sibling] = value
    before, after = KeycloakSpec.model_validate(FULL), KeycloakSpec.model_validate(cleared)
    if before == after:
        return  # the example already holds the default
    below = [f.path for f in LEAVES if f.path == field.path or f.path.startswith(f"{field.path}.")]
    excluded = all(versions.is_excluded(p) for p in below)
    assert (versions.spec_hash(before) == versions.spec_hash(after)) == excluded, field.path


def test_every_exclusion_names_a_real_field_outside_lists_with_a_reason() -> None:
    """A leaf, or a whole sub-object (every field below it is then excluded)."""
    real = {f.path for f in _fields(KeycloakSpec) if "[]" not in f.path}
    for path, reason in versions.HASH_EXCLUDED_FIELDS.items():
        assert path in real, f"{path} is not a field of KeycloakSpec"
        assert len(reason) > 30, f"{path}: say why"


def _pod_template(data: dict[str, Any]) -> Any:
    owner = children.Owner(name="kc", namespace="ns", uid="u")
    s = KeycloakSpec.model_validate(data)
    return render_deployment(owner, s, image=s.image, track="a", version="v")["spec"]["template"]


@pytest.mark.parametrize("full", [True, False], ids=["every-field-set", "defaults"])
@pytest.mark.parametrize("tier", ["cnpg", "managed", "external"])
def test_excluded_fields_never_touch_what_runs(tier: str, full: bool) -> None:
    """The premise of every exclusion: the pods stay the same. Run on defaults too, where no other field
    (an explicit clusterName, say) hides what a change would do."""
    base = {**(FULL if full else {}), "image": IMAGE, "database": {tier: FULL["database"][tier]}}
    for field in (f for f in LEAVES if versions.is_excluded(f.path)):
        if field.keys[0] == "database" and field.keys[1] != tier:
            continue
        start = base
        in_list = next((i for i, k in enumerate(field.keys) if isinstance(k, int)), None)
        if in_list is not None and not _lookup(base, field.keys[:in_list]):
            # An item of a list the defaults leave empty (a NetworkPolicy peer): that section as in FULL,
            # itself excluded, so nothing that reaches the pods is set.
            start = {**base, field.keys[0]: copy.deepcopy(FULL[field.keys[0]])}
        if field.keys[0] == "ingress" and "ingress" not in start:
            # An Ingress needs a host (the defaults have no spec.hostname): its hosts as in FULL, themselves
            # excluded, so nothing that reaches the pods is set.
            start = {**start, "ingress": {"hosts": FULL["ingress"]["hosts"]}}
        if field.keys[0] == "httpRoute" and "httpRoute" not in start:
            # An HTTPRoute needs a Gateway: its parentRefs as in FULL, themselves excluded.
            start = {**start, "httpRoute": {"parentRefs": FULL["httpRoute"]["parentRefs"]}}
        for changed in _changed_specs(field, start):
            assert _pod_template(changed.wire()) == _pod_template(start), field.path


def test_carry_unversioned_keeps_todays_excluded_fields() -> None:
    old = spec(replicas=2, realmNamespaces=["a"], env=[{"name": "X", "value": "1"}]).wire()
    today = spec(image="kc:27.0.0", replicas=5, upgradePolicy={"strategy": "BlueGreen"}).wire()
    restored = KeycloakSpec.model_validate(versions.carry_unversioned(old, today))
    assert restored.image == IMAGE and [e.name for e in restored.env] == ["X"]
    assert restored.replicas == 5 and restored.realm_namespaces == []
    assert restored.upgrade_policy.strategy == "BlueGreen"
    assert versions.spec_hash(restored) == versions.spec_hash(old)


def test_carry_unversioned_leaves_a_tier_the_old_spec_does_not_use() -> None:
    managed = {"host": "h", "credentialsSecret": {"name": "s"}, "pvcName": "p"}
    today = spec(database={"managed": managed}).wire()
    restored = versions.carry_unversioned(spec().wire(), today)
    assert restored["database"] == {"cnpg": {"clusterName": "db", "database": "app"}}


@pytest.mark.parametrize(
    ("wire", "digest"),
    [
        (
            {
                "image": "quay.io/keycloak/keycloak:26.7.3",
                "database": {"external": {"host": "db", "credentialsSecret": {"name": "s"}}},
            },
            "c769a746ab879a9e9ec1768320e98170b8a1c203",
        ),
        (
            {
                "image": "quay.io/keycloak/keycloak:26.7.3",
                "database": {"cnpg": {"clusterName": "kcdb"}},
                "cacheIsolation": {"autoRevision": True},
                "upgradePolicy": {"strategy": "BlueGreen", "compatibilityCheck": True},
            },
            "9e62c0ef93c05f6730e4e19996779b380f05f60b",
        ),
    ],
)
def test_an_operator_upgrade_starts_no_new_version(wire: dict, digest: str) -> None:
    """The hashes the previous release computed for these specs: a new field with a non-null default would
    change every Keycloak's version when the operator is upgraded (a VersionStarted, a Deployment write,
    the last good version pushed out of lastVersion). A new field stays unset by default."""
    from keycloak_operator.models.keycloak import KeycloakSpec

    assert versions.spec_hash(KeycloakSpec.model_validate(wire)) == digest
