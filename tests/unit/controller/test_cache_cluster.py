import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from keycloak_operator.core.cache_cluster import CacheClusterResolution, resolve_cache_cluster
from keycloak_operator.core.images import parse_semver, release_of
from keycloak_operator.kernel import names
from keycloak_operator.models.cache_isolation import CacheIsolation

IMG = "quay.io/keycloak/keycloak"
DIGEST = "sha256:" + "b" * 64


def iso(**kw: object) -> CacheIsolation:
    return CacheIsolation.model_validate(kw)


def revision(image: str, name: str = "kc") -> CacheClusterResolution:
    return resolve_cache_cluster(name, iso(autoRevision=True), image)


@pytest.mark.parametrize(
    "tag", ["26.0.0", "26.0.1", "26.3.0", "v26.1.0", "26.0.0-rc.1", "26.2.5-SNAPSHOT", "26.0.0-0.x"]
)
def test_auto_revision_is_stable_across_patch_and_minor(tag: str) -> None:
    r = revision(f"{IMG}:{tag}")
    assert (r.name, r.source) == ("kc-v26", "autoRevision")


MEMBERSHIP = "each pod discovers only the pods of its own cache cluster"


@pytest.mark.parametrize("tag", ["26.7.0", "26.7.3", "26.8.1", "27.0.0", "v26.7.3", "26.7.0-rc.1"])
def test_from_26_7_a_name_isolates_by_name_and_membership(tag: str) -> None:
    assert revision(f"{IMG}:{tag}") == CacheClusterResolution(
        "kc-v27" if tag.startswith("27") else "kc-v26",
        "autoRevision",
        True,
        "autoRevision: isolated by name (Keycloak honours it from 26.7) and by discovery membership: "
        + MEMBERSHIP,
        False,
    )


@pytest.mark.parametrize("tag", ["25.0.6", "26.0.0", "26.5.6", "26.6.1", "v26.1.0"])
def test_before_26_7_a_name_isolates_by_discovery_membership_alone(tag: str) -> None:
    """Real 25.0.6 and 26.5.6 servers given different names formed one view on channel ISPN when they found
    each other: the name is ignored, so only discovery membership (ADR 0018) keeps them apart, and the
    reason says so."""
    r = revision(f"{IMG}:{tag}")
    assert (r.name, r.source, r.isolated, r.warning) == (
        f"kc-v{tag.lstrip('v')[:2]}",
        "autoRevision",
        True,
        False,
    )
    assert r.reason.startswith("autoRevision: isolated by discovery membership only: " + MEMBERSHIP)
    assert "ignores the cluster name (honoured from 26.7)" in r.reason


def test_an_explicit_name_on_an_image_that_names_no_release_isolates_by_membership() -> None:
    r = resolve_cache_cluster("kc", iso(clusterName="team-x"), f"{IMG}:latest")
    assert (r.name, r.isolated, r.warning) == ("team-x", True, False)
    assert "by discovery membership" in r.reason and "names no release" in r.reason
    assert "unknown" in r.reason and "by name" not in r.reason


def test_auto_revision_changes_on_major() -> None:
    assert revision(f"{IMG}:27.0.0").name == "kc-v27"
    assert revision(f"{IMG}:0.1.0").name == "kc-v0"


@pytest.mark.parametrize(
    "image",
    [
        "registry.local:5000/keycloak/keycloak:26.0.1",
        "localhost:5000/kc:26.0.1",
        "[::1]:5000/kc:26.0.1",
        f"{IMG}:26.0.1@{DIGEST}",  # tag plus digest: the tag names the version
    ],
)
def test_the_version_comes_from_the_tag_not_the_port_or_digest(image: str) -> None:
    assert revision(image).name == "kc-v26"


@pytest.mark.parametrize(
    "image",
    [
        f"{IMG}:latest",
        f"{IMG}:nightly",
        f"{IMG}:26",
        f"{IMG}:26.0",
        f"{IMG}:026.0.0",
        f"{IMG}:26.0.0_build1",
        f"{IMG}@{DIGEST}",
        IMG,
        "Not An Image",
        f"{IMG}:26.0.0\n",
        "",
    ],
)
def test_auto_revision_refuses_what_names_no_fixed_major(image: str) -> None:
    r = revision(image)
    assert (r.name, r.source, r.isolated, r.warning) == (None, "autoRevision", False, True)
    assert "spec.cacheIsolation.clusterName" in r.reason and "off" in r.reason


def test_the_reason_says_what_was_wrong() -> None:
    assert "'latest'" in revision(f"{IMG}:latest").reason
    assert "no tag" in revision(f"{IMG}@{DIGEST}").reason
    assert "does not parse" in revision("UPPER/kc:26.0.0").reason


def test_the_reason_stays_short_for_a_huge_image() -> None:
    r = revision("X" * 100_000)
    assert r.warning and len(r.reason) < 500 and r.reason.endswith("explicitly")


def test_auto_suffix_uses_the_whole_tag() -> None:
    r = resolve_cache_cluster("kc", iso(autoSuffix=True), f"{IMG}:26.7.1")
    assert (r.name, r.source, r.isolated, r.warning) == ("kc-26.7.1", "autoSuffix", True, False)
    assert r.reason.startswith("autoSuffix: isolated by name")
    with_digest = resolve_cache_cluster("kc", iso(autoSuffix=True), f"{IMG}:latest@{DIGEST}")
    assert with_digest.name == "kc-latest"


def test_auto_suffix_sanitises_a_tag_that_is_no_label() -> None:
    r = resolve_cache_cluster("kc", iso(autoSuffix=True), f"{IMG}:26.0.")
    assert r.name == f"kc-26.0-{names.short_hash('kc-26.0.')}"
    # A tag that names no release: Keycloak may ignore the name; membership isolates all the same.
    assert r.isolated and not r.warning and "by discovery membership" in r.reason


@pytest.mark.parametrize("image", [f"{IMG}@{DIGEST}", IMG, "::bad::"])
def test_auto_suffix_without_a_tag_is_off_with_a_warning(image: str) -> None:
    r = resolve_cache_cluster("kc", iso(autoSuffix=True), image)
    assert (r.name, r.source, r.isolated, r.warning) == (None, "autoSuffix", False, True)
    assert "spec.cacheIsolation.clusterName" in r.reason


def test_none_is_not_a_warning() -> None:
    for image in (f"{IMG}:latest", f"{IMG}@{DIGEST}", "::bad::"):
        assert resolve_cache_cluster("kc", iso(), image) == CacheClusterResolution(
            None, "none", False, "", False
        )


def test_explicit_cluster_name_is_used_as_is_whatever_the_image() -> None:
    for image in (f"{IMG}:latest", f"{IMG}@{DIGEST}", "::bad::", f"{IMG}:27.0.0"):
        r = resolve_cache_cluster("kc", iso(clusterName="v26-upgrade", autoRevision=True), image)
        assert (r.name, r.source, r.isolated, r.warning) == ("v26-upgrade", "clusterName", True, False)
        assert ("isolated by name" in r.reason) == image.endswith("27.0.0")


# Every combination of the three settings, against every kind of image.
IMAGES = {
    "semver": f"{IMG}:26.7.1",
    "latest": f"{IMG}:latest",
    "digest-only": f"{IMG}@{DIGEST}",
    "tag+digest": f"{IMG}:26.7.1@{DIGEST}",
    "unparseable": "Not An Image",
}


@pytest.mark.parametrize(
    ("cluster_name", "auto_revision", "auto_suffix", "kind"),
    list(itertools.product([None, "team-x"], [False, True], [False, True], IMAGES)),
)
def test_priority_order(cluster_name: str | None, auto_revision: bool, auto_suffix: bool, kind: str) -> None:
    r = resolve_cache_cluster(
        "kc", iso(clusterName=cluster_name, autoRevision=auto_revision, autoSuffix=auto_suffix), IMAGES[kind]
    )
    tag = {"semver": "26.7.1", "latest": "latest", "tag+digest": "26.7.1"}.get(kind)
    if cluster_name:
        expected = ("team-x", "clusterName")
    elif auto_revision:  # wins over autoSuffix, and never falls back to it
        expected = ("kc-v26" if kind in ("semver", "tag+digest") else None, "autoRevision")
    elif auto_suffix:
        expected = (f"kc-{tag}" if tag else None, "autoSuffix")
    else:
        expected = (None, "none")
    assert (r.name, r.source) == expected
    # Any resolved name isolates (by membership); by name as well only where the image is 26.7 or later.
    assert r.isolated == (r.name is not None)
    assert ("isolated by name" in r.reason) == (r.isolated and kind in ("semver", "tag+digest"))
    asked = bool(cluster_name or auto_revision or auto_suffix)
    assert r.warning == (asked and not r.isolated)
    assert bool(r.reason) == asked


def test_long_names_differing_only_at_the_end_do_not_collide() -> None:
    a, b = revision(f"{IMG}:26.0.0", "k" * 62 + "a"), revision(f"{IMG}:26.0.0", "k" * 62 + "b")
    assert a.name and b.name and a.name != b.name
    tag_a = resolve_cache_cluster("k" * 47, iso(autoSuffix=True), f"{IMG}:26.0.1-{'x' * 90}a")
    tag_b = resolve_cache_cluster("k" * 47, iso(autoSuffix=True), f"{IMG}:26.0.1-{'x' * 90}b")
    assert tag_a.name and tag_b.name and tag_a.name != tag_b.name
    for name in (a.name, b.name, tag_a.name, tag_b.name):
        assert names.is_label_value(name)


def test_the_longest_keycloak_name_keeps_a_readable_revision_name() -> None:
    name = "k" * names.MAX_KEYCLOAK_NAME
    assert revision(f"{IMG}:26.0.0", name).name == f"{name}-v26"


# --- properties -------------------------------------------------------------------------------------------

keycloak_names = st.from_regex(r"[a-z]([a-z0-9-]{0,61}[a-z0-9])?", fullmatch=True)
images = st.one_of(
    st.builds(
        lambda tag: f"{IMG}:{tag}", st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}", fullmatch=True)
    ),
    st.builds(lambda a, b, c: f"{IMG}:{a}.{b}.{c}", *[st.integers(0, 10**70)] * 3),
    st.text(max_size=200),
)
isolations = st.builds(
    lambda name, rev, suf: iso(clusterName=name, autoRevision=rev, autoSuffix=suf),
    st.one_of(st.none(), st.from_regex(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?", fullmatch=True)),
    st.booleans(),
    st.booleans(),
)


@given(keycloak_names, isolations, images)
def test_every_result_is_consistent_and_every_name_a_valid_label(
    keycloak: str, isolation: CacheIsolation, image: str
) -> None:
    r = resolve_cache_cluster(keycloak, isolation, image)
    assert r.name is None or names.is_label_value(r.name)
    assert r.isolated == (r.name is not None)  # membership isolates whatever the version
    if "isolated by name" in r.reason:  # the name is claimed only where Keycloak honours it
        version = release_of(image)
        assert version is not None and (version.major, version.minor) >= (26, 7)
    assert r.warning == (not r.isolated and r.source != "none")
    assert bool(r.reason) == (r.source != "none") and len(r.reason) < 500
    if isolation.cluster_name:
        assert (r.name, r.source) == (isolation.cluster_name, "clusterName")


@given(keycloak_names, st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}", fullmatch=True))
def test_auto_revision_never_uses_a_tag_that_is_not_semver(keycloak: str, tag: str) -> None:
    r = revision(f"{IMG}:{tag}", keycloak)
    semver = parse_semver(tag)
    if semver is None:
        assert r.name is None and r.warning
    else:
        assert r.name == names.label_value(f"{keycloak}-v{semver.major}")


@given(
    keycloak_names,
    st.integers(0, 10**6),
    st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)),
    st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)),
)
def test_same_major_same_cluster_other_major_other_cluster(
    keycloak: str, major: int, one: tuple[int, int], two: tuple[int, int]
) -> None:
    a = revision(f"{IMG}:{major}.{one[0]}.{one[1]}", keycloak).name
    b = revision(f"{IMG}:{major}.{two[0]}.{two[1]}", keycloak).name
    c = revision(f"{IMG}:{major + 1}.{one[0]}.{one[1]}", keycloak).name
    assert a is not None and a == b and a != c
