import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from keycloak_operator.core import names
from keycloak_operator.core.cache_cluster import resolve_cache_cluster
from keycloak_operator.models.keycloak import CacheIsolation

IMG = "quay.io/keycloak/keycloak"


def iso(**kw) -> CacheIsolation:
    return CacheIsolation.model_validate(kw)


@pytest.mark.parametrize("tag", ["26.0.0", "26.0.1", "26.3.0", "v26.1.0", "26.0.0-rc.1"])
def test_auto_revision_is_stable_across_patch_and_minor(tag: str) -> None:
    r = resolve_cache_cluster("kc", iso(autoRevision=True), f"{IMG}:{tag}")
    assert (r.name, r.source, r.isolated, r.warning) == ("kc-v26", "autoRevision", True, False)


def test_auto_revision_changes_on_major() -> None:
    assert resolve_cache_cluster("kc", iso(autoRevision=True), f"{IMG}:27.0.0").name == "kc-v27"


def test_registry_port_is_not_the_tag() -> None:
    r = resolve_cache_cluster("kc", iso(autoRevision=True), "registry.local:5000/keycloak/keycloak:26.0.1")
    assert r.name == "kc-v26"


@pytest.mark.parametrize(
    "image",
    [f"{IMG}:latest", f"{IMG}:nightly", f"{IMG}:26", f"{IMG}@sha256:{'b' * 64}", f"{IMG}", "Not An Image"],
)
def test_auto_revision_refuses_what_is_not_semver(image: str) -> None:
    r = resolve_cache_cluster("kc", iso(autoRevision=True), image)
    assert r.name is None and r.isolated is False and r.warning is True
    assert "clusterName" in r.reason


def test_tag_plus_digest_uses_the_tag() -> None:
    r = resolve_cache_cluster("kc", iso(autoRevision=True), f"{IMG}:26.0.0@sha256:{'c' * 64}")
    assert r.name == "kc-v26"


def test_auto_suffix_uses_the_whole_tag_sanitised() -> None:
    r = resolve_cache_cluster("kc", iso(autoSuffix=True), f"{IMG}:26.0.1")
    assert (r.name, r.source) == ("kc-26.0.1", "autoSuffix")
    digest_only = resolve_cache_cluster("kc", iso(autoSuffix=True), f"{IMG}@sha256:{'d' * 64}")
    assert digest_only.name is None and digest_only.warning


def test_none_is_not_a_warning() -> None:
    r = resolve_cache_cluster("kc", iso(), f"{IMG}:latest")
    assert (r.name, r.source, r.isolated, r.warning) == (None, "none", False, False)


@pytest.mark.parametrize("flags", list(itertools.product([None, "team-x"], [False, True], [False, True])))
def test_priority_order(flags) -> None:
    cluster_name, auto_revision, auto_suffix = flags
    r = resolve_cache_cluster(
        "kc",
        iso(clusterName=cluster_name, autoRevision=auto_revision, autoSuffix=auto_suffix),
        f"{IMG}:26.0.1",
    )
    if cluster_name:
        assert (r.name, r.source) == ("team-x", "clusterName")
    elif auto_revision:
        assert (r.name, r.source) == ("kc-v26", "autoRevision")
    elif auto_suffix:
        assert (r.name, r.source) == ("kc-26.0.1", "autoSuffix")
    else:
        assert (r.name, r.source) == (None, "none")


def test_long_names_are_valid_labels_and_do_not_collide() -> None:
    a = resolve_cache_cluster("k" * 47, iso(autoSuffix=True), f"{IMG}:26.0.1-{'x' * 40}a")
    b = resolve_cache_cluster("k" * 47, iso(autoSuffix=True), f"{IMG}:26.0.1-{'x' * 40}b")
    assert a.name and b.name and a.name != b.name
    assert names.is_label_value(a.name) and names.is_label_value(b.name)


@given(
    st.from_regex(r"[a-z][a-z0-9-]{0,45}[a-z0-9]", fullmatch=True),
    st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}", fullmatch=True),
    st.booleans(),
)
def test_every_name_is_a_valid_label(keycloak: str, tag: str, revision: bool) -> None:
    r = resolve_cache_cluster(keycloak, iso(autoRevision=revision, autoSuffix=not revision), f"{IMG}:{tag}")
    assert r.name is None or names.is_label_value(r.name)
    assert r.isolated == (r.name is not None)
