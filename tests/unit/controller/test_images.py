import re

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from keycloak_operator.core.images import (
    NAME_MAX,
    ImageParseError,
    ImageReference,
    SemVer,
    parse_image,
    parse_semver,
    release_of,
    repository,
)

DIGEST = "sha256:" + "a" * 64
SHA512 = "sha512:" + "0123456789abcdef" * 8
OTHER_ALGORITHM = "multi.hash+b16:" + "ABCDEF0123456789" * 2  # not registered: grammar only, any case


@pytest.mark.parametrize(
    ("ref", "domain", "path", "tag", "digest"),
    [
        ("keycloak", None, "keycloak", None, None),
        ("keycloak/keycloak:26.0.0", None, "keycloak/keycloak", "26.0.0", None),
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
        ("localhost:5000", None, "localhost", "5000", None),  # no slash: a name and a tag, not a host
        ("reg:5000/kc", "reg:5000", "kc", None, None),  # a port alone makes a host
        ("127.0.0.1:5000/kc:26.0.0", "127.0.0.1:5000", "kc", "26.0.0", None),
        ("[::1]:5000/kc:26.0.0", "[::1]:5000", "kc", "26.0.0", None),
        ("[fe80::1]/kc", "[fe80::1]", "kc", None, None),
        ("Quay.IO/keycloak", "Quay.IO", "keycloak", None, None),  # hosts may be upper case, paths not
        (
            "my-registry.example.com/a.b/c_d/e__f/g--h:x",
            "my-registry.example.com",
            "a.b/c_d/e__f/g--h",
            "x",
            None,
        ),
        ("library/kc:26", None, "library/kc", "26", None),
        ("kc:_Latest-1.x", None, "kc", "_Latest-1.x", None),
        ("kc:" + "t" * 128, None, "kc", "t" * 128, None),
        (f"quay.io/keycloak/keycloak@{DIGEST}", "quay.io", "keycloak/keycloak", None, DIGEST),
        (f"quay.io/keycloak/keycloak:26.0.0@{DIGEST}", "quay.io", "keycloak/keycloak", "26.0.0", DIGEST),
        (f"kc@{SHA512}", None, "kc", None, SHA512),
        (f"kc:26@{OTHER_ALGORITHM}", None, "kc", "26", OTHER_ALGORITHM),
    ],
)
def test_valid_references(
    ref: str, domain: str | None, path: str, tag: str | None, digest: str | None
) -> None:
    parsed = parse_image(ref)
    assert parsed == ImageReference(domain, path, tag, digest)
    assert str(parsed) == ref


def test_version_is_what_follows_the_name() -> None:
    def version(ref: str) -> str:
        parsed = parse_image(ref)
        assert isinstance(parsed, ImageReference)
        return parsed.version

    assert version("reg:5000/kc:26.0.0") == "26.0.0"
    assert version(f"kc@{DIGEST}") == f"@{DIGEST}"
    assert version(f"kc:26@{DIGEST}") == f"26@{DIGEST}"
    assert version("reg:5000/kc") == ""


def test_the_name_limit_counts_domain_and_path() -> None:
    domain = "r.io"
    at_limit = domain + "/" + "a" * (NAME_MAX - len(domain) - 1)
    assert isinstance(parse_image(at_limit + ":1"), ImageReference)
    over = parse_image(at_limit + "a:1")
    assert isinstance(over, ImageParseError) and str(NAME_MAX) in over.message


@pytest.mark.parametrize(
    "ref",
    [
        "",
        " kc",
        "kc ",
        "kc\n",
        "kc:1\n@" + DIGEST,  # `$` would let a newline through before the digest
        "kc\n:1",
        "quay.io\n/kc:1",
        "kc:café",  # Python's \w is Unicode; the grammar's is not
        "kc:\u0663",  # an Arabic-Indic digit
        "Quay.io/Keycloak:1",
        "UPPER/case:1",  # no dot, no port: a path, and paths are lower case
        "[abc]/kc",  # without a colon it is no host, and brackets are no path
        "kc:",
        "kc:-bad",
        "kc:.bad",
        "kc:" + "x" * 129,
        "kc:1:2",
        "kc@",
        "kc@@" + DIGEST,
        f"kc@{DIGEST}@{DIGEST}",
        "kc@sha256:short",
        "kc@sha256:" + "a" * 32,  # the grammar allows 32, sha256 needs 64
        "kc@sha256:" + "a" * 65,
        "kc@sha256:" + "A" * 64,  # registered algorithms are lower-case hex
        "kc@sha512:" + "a" * 64,
        "kc@md5:" + "a" * 31,
        "kc@1sha:" + "a" * 32,
        "a//b",
        "a___b",
        "-a",
        "a-",
        "a.",
        "/kc",
        "kc/",
        "quay.io:/kc",
        "quay.io:abc/kc",
        "-quay.io/kc",
        "quay..io/kc",
        "host:99999999999999999999/kc:1:2",
    ],
)
def test_invalid_references_are_errors_not_exceptions(ref: str) -> None:
    result = parse_image(ref)
    assert isinstance(result, ImageParseError)
    assert result.reference == ref and result.message


@given(st.text(max_size=400))
def test_arbitrary_text_never_raises(text: str) -> None:
    assert isinstance(parse_image(text), ImageReference | ImageParseError)


def test_pathological_input_is_quick() -> None:
    # No regex here backtracks badly; hypothesis' deadline would catch a slow one on short input.
    for text in ("a" * 100_000 + "!", "a-" * 50_000 + "/", "a." * 50_000 + "!/kc", "1." * 50_000 + "@"):
        assert isinstance(parse_image(text), ImageParseError)


# --- generated valid references ------------------------------------------------------------------------

_domain_component = st.from_regex(r"[a-zA-Z0-9]([a-zA-Z0-9-]{0,6}[a-zA-Z0-9])?", fullmatch=True)
_port = st.one_of(st.just(""), st.from_regex(r":[0-9]{1,5}", fullmatch=True))
domains = st.one_of(
    st.none(),
    st.builds(lambda port: "localhost" + port, _port),
    st.builds(lambda a, b, port: f"{a}.{b}{port}", _domain_component, _domain_component, _port),
    st.builds(lambda c, port: c + port, _domain_component, st.from_regex(r":[0-9]{1,5}", fullmatch=True)),
    st.builds(
        lambda h, port: f"[{h}]{port}", st.from_regex(r"[0-9a-f]{0,4}:[0-9a-f:]{0,8}", fullmatch=True), _port
    ),
)
path_component = st.from_regex(r"[a-z0-9]{1,6}(([._]|__|-{1,3})[a-z0-9]{1,6}){0,2}", fullmatch=True)
tags = st.one_of(st.none(), st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}", fullmatch=True))
digests = st.one_of(
    st.none(),
    st.from_regex(r"sha256:[0-9a-f]{64}", fullmatch=True),
    st.from_regex(r"sha512:[0-9a-f]{128}", fullmatch=True),
    st.from_regex(r"[a-z][a-z0-9]{0,4}([-_+.][a-z][a-z0-9]{0,3})?:[0-9a-fA-F]{32,40}", fullmatch=True).filter(
        lambda d: d.split(":")[0] not in ("sha256", "sha384", "sha512")
    ),
)


def _is_bare_domain_like(first: str) -> bool:
    return "." in first or first == "localhost"


@given(domains, st.lists(path_component, min_size=1, max_size=4), tags, digests)
def test_generated_references_round_trip(
    domain: str | None, path: list[str], tag: str | None, digest: str | None
) -> None:
    # Without a host, a dotted first component would (rightly) be read as the host.
    assume(domain is not None or len(path) == 1 or not _is_bare_domain_like(path[0]))
    expected = ImageReference(domain, "/".join(path), tag, digest)
    ref = str(expected)
    assert parse_image(ref) == expected


@given(st.lists(path_component, min_size=1, max_size=3), st.data())
def test_an_upper_case_letter_in_the_path_is_an_error(path: list[str], data: st.DataObject) -> None:
    joined = "/".join(path)
    letters = [i for i, c in enumerate(joined) if c.isalpha()]
    if not letters:
        joined, letters = joined + "a", [len(joined)]
    i = data.draw(st.sampled_from(letters))
    broken = joined[:i] + joined[i].upper() + joined[i + 1 :]
    assert isinstance(parse_image(f"quay.io/{broken}:1"), ImageParseError)


# Text drawn from the grammar's own alphabet reaches every branch, valid results included.
_ALPHABET = "abAB09.:/@_-[]+ \n\u00e9"
grammar_text = st.text(alphabet=_ALPHABET, max_size=80)

_TAG_CHARS = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
_PATH_CHARS = re.compile(r"[a-z0-9._/-]+")


@st.composite
def near_references(draw: st.DrawFn) -> str:
    """A valid reference with one character inserted, deleted or replaced: the edges of the grammar."""
    ref = str(
        ImageReference(
            draw(domains), "/".join(draw(st.lists(path_component, min_size=1))), draw(tags), draw(digests)
        )
    )
    i = draw(st.integers(min_value=0, max_value=len(ref)))
    c = draw(st.sampled_from(_ALPHABET))
    return draw(st.sampled_from([ref[:i] + c + ref[i:], ref[:i] + ref[i + 1 :], ref[:i] + c + ref[i + 1 :]]))


@given(st.one_of(grammar_text, near_references()))
def test_whatever_parses_is_lossless_and_well_formed(text: str) -> None:
    parsed = parse_image(text)
    if isinstance(parsed, ImageParseError):
        return
    assert str(parsed) == text
    assert parse_image(str(parsed)) == parsed
    assert _PATH_CHARS.fullmatch(parsed.path)
    assert parsed.tag is None or (_TAG_CHARS.fullmatch(parsed.tag) and len(parsed.tag) <= 128)
    if parsed.digest is not None and parsed.digest.startswith("sha256:"):
        assert re.fullmatch(r"sha256:[0-9a-f]{64}", parsed.digest)
    if parsed.domain is None:
        first = parsed.path.split("/")[0]
        assert "/" not in parsed.path or ("." not in first and first != "localhost")


# --- SemVer ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tag", "expected"),
    [
        ("26.0.0", SemVer(26, 0, 0)),
        ("26.0.1", SemVer(26, 0, 1)),
        ("26.3.0", SemVer(26, 3, 0)),
        ("v27.1.0", SemVer(27, 1, 0)),
        ("0.0.0", SemVer(0, 0, 0)),
        ("26.0.0-rc.1", SemVer(26, 0, 0, prerelease="rc.1")),
        ("1.2.3-alpha.0.beta", SemVer(1, 2, 3, prerelease="alpha.0.beta")),
        ("1.2.3-0a.--.x-y", SemVer(1, 2, 3, prerelease="0a.--.x-y")),
        ("1.2.3+001.sha-5114f85", SemVer(1, 2, 3, build="001.sha-5114f85")),  # leading zeros fine in build
        ("26.1.0-rc.2+build.5", SemVer(26, 1, 0, prerelease="rc.2", build="build.5")),
        ("999.0.0-SNAPSHOT", SemVer(999, 0, 0, prerelease="SNAPSHOT")),
    ],
)
def test_semver(tag: str, expected: SemVer) -> None:
    assert parse_semver(tag) == expected


@pytest.mark.parametrize(
    "tag",
    [
        None,
        "",
        "latest",
        "nightly",
        "26",
        "26.0",
        "v26",
        "v26.0",
        "026.0.0",
        "26.00.1",
        "26.0.01",
        "26.0.0-",
        "26.0.0+",
        "26.0.0-01",
        "26.0.0-rc..1",
        "26.0.0-rc_1",
        "26.0.0_build1",
        "26.0.0.1",
        "V26.0.0",
        "vv26.0.0",
        "26.0.0\n",
        " 26.0.0",
        "26.0.0-\u00e9",
        "\u0662\u0666.0.0",
    ],
)
def test_not_semver(tag: str | None) -> None:
    assert parse_semver(tag) is None


def test_a_number_too_long_for_int_is_refused_not_raised() -> None:
    assert parse_semver("1" * 5000 + ".0.0") is None


_num = st.integers(min_value=0, max_value=10**30)
_ident = st.from_regex(r"0|[1-9][0-9]{0,3}|[0-9]{0,2}[A-Za-z-][0-9A-Za-z-]{0,4}", fullmatch=True)
_build_ident = st.from_regex(r"[0-9A-Za-z-]{1,6}", fullmatch=True)


@given(
    _num,
    _num,
    _num,
    st.one_of(st.none(), st.lists(_ident, min_size=1, max_size=3).map(".".join)),
    st.one_of(st.none(), st.lists(_build_ident, min_size=1, max_size=3).map(".".join)),
    st.booleans(),
)
def test_generated_semver_round_trips(
    major: int, minor: int, patch: int, pre: str | None, build: str | None, v: bool
) -> None:
    text = (
        ("v" if v else "")
        + f"{major}.{minor}.{patch}"
        + (f"-{pre}" if pre else "")
        + (f"+{build}" if build else "")
    )
    assert parse_semver(text) == SemVer(major, minor, patch, prerelease=pre, build=build)


@given(_num, _num, _num, st.integers(min_value=0, max_value=2))
def test_a_leading_zero_in_any_core_number_is_refused(major: int, minor: int, patch: int, which: int) -> None:
    parts = [str(major), str(minor), str(patch)]
    parts[which] = "0" + parts[which]
    assert parse_semver(".".join(parts)) is None


@given(st.text(max_size=200))
def test_semver_never_raises(text: str) -> None:
    result = parse_semver(text)
    assert result is None or isinstance(result, SemVer)


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ("quay.io/keycloak/keycloak:26.7.3", SemVer(26, 7, 3)),
        ("keycloak:v26.6.0-rc.1", SemVer(26, 6, 0, prerelease="rc.1")),
        (f"quay.io/keycloak/keycloak:26.7.3@{DIGEST}", SemVer(26, 7, 3)),
        (f"quay.io/keycloak/keycloak@{DIGEST}", None),  # a digest carries no version
        ("quay.io/keycloak/keycloak", None),
        ("quay.io/keycloak/keycloak:latest", None),
        ("quay.io/keycloak/keycloak:26.7", None),
        ("Quay.io/Keycloak:26.7.3", None),  # does not parse
        ("", None),
    ],
)
def test_the_release_an_image_names(image: str, expected: SemVer | None) -> None:
    assert release_of(image) == expected


@given(st.text(max_size=200))
def test_release_of_never_raises_and_agrees_with_the_tag(image: str) -> None:
    ref = parse_image(image)
    expected = None if isinstance(ref, ImageParseError) else parse_semver(ref.tag)
    assert release_of(image) == expected


@pytest.mark.parametrize(
    ("reference", "repo"),
    [
        ("keycloak", "docker.io/library/keycloak"),
        ("keycloak:26.7.3", "docker.io/library/keycloak"),
        ("team/keycloak@sha256:" + "ab" * 32, "docker.io/team/keycloak"),
        ("index.docker.io/library/keycloak:1", "docker.io/library/keycloak"),
        ("registry-1.docker.io/keycloak", "registry-1.docker.io/keycloak"),  # not an alias to runtimes
        ("quay.io/keycloak/keycloak:26.7.3", "quay.io/keycloak/keycloak"),
        ("localhost:5000/keycloak:latest", "localhost:5000/keycloak"),
        ("127.0.0.1:5000/keycloak", "127.0.0.1:5000/keycloak"),
        ("not an image", None),
    ],
)
def test_the_repository_is_named_as_the_runtime_reports_it(reference: str, repo: str | None) -> None:
    assert repository(reference) == repo
