import pytest
from hypothesis import given
from hypothesis import strategies as st

from keycloak_operator.core.images import ImageParseError, ImageReference, parse_image, parse_semver

DIGEST = "sha256:" + "a" * 64


@pytest.mark.parametrize(
    ("ref", "domain", "path", "tag", "digest"),
    [
        ("keycloak", None, "keycloak", None, None),
        ("quay.io/keycloak/keycloak:26.0.0", "quay.io", "keycloak/keycloak", "26.0.0", None),
        (
            "registry.local:5000/keycloak/keycloak:26.0.1",
            "registry.local:5000",
            "keycloak/keycloak",
            "26.0.1",
            None,
        ),
        ("registry.local:5000/keycloak/keycloak", "registry.local:5000", "keycloak/keycloak", None, None),
        ("localhost/kc:1", "localhost", "kc", "1", None),
        ("localhost:5000/a/b/c/kc:latest", "localhost:5000", "a/b/c/kc", "latest", None),
        ("library/kc:26", None, "library/kc", "26", None),
        (f"quay.io/keycloak/keycloak@{DIGEST}", "quay.io", "keycloak/keycloak", None, DIGEST),
        (f"quay.io/keycloak/keycloak:26.0.0@{DIGEST}", "quay.io", "keycloak/keycloak", "26.0.0", DIGEST),
        ("[::1]:5000/kc:26.0.0", "[::1]:5000", "kc", "26.0.0", None),
    ],
)
def test_valid_references(ref: str, domain, path, tag, digest) -> None:
    parsed = parse_image(ref)
    assert parsed == ImageReference(domain, path, tag, digest)
    assert str(parsed) == ref


def test_version_is_what_follows_the_name() -> None:
    assert parse_image("kc:26.0.0").version == "26.0.0"
    assert parse_image(f"kc@{DIGEST}").version == f"@{DIGEST}"
    assert parse_image(f"kc:26@{DIGEST}").version == f"26@{DIGEST}"


@pytest.mark.parametrize(
    "ref",
    [
        "",
        " kc",
        "Quay.io/Keycloak:1",
        "kc:",
        "kc:-bad",
        "kc@sha256:short",
        "a//b",
        "kc:" + "x" * 129,
        "UPPER/case:1",
        "/kc",
        "kc/",
        "host:99999999999999999999/kc:1:2",
    ],
)
def test_invalid_references_are_errors_not_exceptions(ref: str) -> None:
    assert isinstance(parse_image(ref), ImageParseError)


@given(st.text(max_size=300))
def test_arbitrary_text_never_raises(text: str) -> None:
    result = parse_image(text)
    assert isinstance(result, ImageReference | ImageParseError)


component = st.from_regex(r"[a-z0-9]{1,8}([._-][a-z0-9]{1,8})?", fullmatch=True)
references = st.builds(
    lambda domain, path, tag, digest: (
        (f"{domain}/" if domain else "")
        + "/".join(path)
        + (f":{tag}" if tag else "")
        + (f"@{digest}" if digest else "")
    ),
    st.one_of(st.none(), st.from_regex(r"[a-z]{1,8}\.[a-z]{2,4}(:[1-9][0-9]{0,4})?", fullmatch=True)),
    st.lists(component, min_size=1, max_size=4),
    st.one_of(st.none(), st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,20}", fullmatch=True)),
    st.one_of(st.none(), st.from_regex(r"sha256:[0-9a-f]{64}", fullmatch=True)),
)


@given(references)
def test_generated_references_round_trip(ref: str) -> None:
    parsed = parse_image(ref)
    assert isinstance(parsed, ImageReference), parsed
    assert str(parsed) == ref


@pytest.mark.parametrize(
    ("tag", "major"),
    [
        ("26.0.0", 26),
        ("26.0.1", 26),
        ("26.3.0", 26),
        ("v27.1.0", 27),
        ("26.0.0-rc.1", 26),
        ("1.2.3-alpha.0.beta", 1),
        ("0.0.0", 0),
    ],
)
def test_semver(tag: str, major: int) -> None:
    parsed = parse_semver(tag)
    assert parsed is not None and parsed.major == major


@pytest.mark.parametrize(
    "tag",
    [
        None,
        "",
        "latest",
        "nightly",
        "26",
        "26.0",
        "026.0.0",
        "26.00.1",
        "26.0.0-",
        "26.0.0-01",
        "26.0.0.1",
        "V26.0.0",
    ],
)
def test_not_semver(tag) -> None:
    assert parse_semver(tag) is None


def test_semver_prerelease_and_build() -> None:
    parsed = parse_semver("26.1.0-rc.2+build.5")
    assert parsed is not None and parsed.prerelease == "rc.2" and parsed.build == "build.5"
