"""The CRD's image reference pattern (kernel/patterns.py) against the grammar's parser (core/images.py).

Two independent spellings of the distribution reference grammar: one regular expression the API server,
pydantic and Python all run, and a hand-written parser. The properties hold them together both ways.
"""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from keycloak_operator.core.images import ImageParseError, parse_image
from keycloak_operator.kernel import patterns as pt

PATTERN = re.compile(pt.IMAGE_REFERENCE)
FIELD = TypeAdapter(pt.ImageReference)
RUNTIME_DIGESTS = ("sha256", "sha384", "sha512")


def grammar_accepts(text: str) -> bool:
    """The hand-written parser, with what a runtime can pull: a registered digest algorithm."""
    ref = parse_image(text)
    if isinstance(ref, ImageParseError):
        return False
    return ref.digest is None or ref.digest.split(":")[0] in RUNTIME_DIGESTS


def field_accepts(text: str) -> bool:
    """pydantic's regular expression engine (Rust), as the operator reads a stored object."""
    try:
        FIELD.validate_python(text)
    except ValidationError:
        return False
    return True


def pattern_accepts(text: str) -> bool:
    return len(text) <= pt.IMAGE_MAX and PATTERN.fullmatch(text) is not None


@settings(max_examples=150)
@given(st.from_regex(pt.IMAGE_REFERENCE, fullmatch=True).filter(lambda s: "\n" not in s))
def test_whatever_the_pattern_accepts_is_a_reference(text: str) -> None:
    if len(text) <= pt.IMAGE_MAX:
        assert grammar_accepts(text), text
        assert field_accepts(text), text


# Strings built from the grammar's own pieces, valid and broken: registries with and without dots, ports and
# brackets, upper case, separators in the wrong places, tags, digests of every length and algorithm.
_piece = st.sampled_from(
    ["a", "b0", "Z", "x-y", "a__b", "a_b", "a.b", "a..b", "-a", "a-", "localhost", "LOCALHOST", "[::1]", "9"]
)
_name = st.lists(_piece, min_size=1, max_size=4).map("/".join)
_port = st.sampled_from(["", ":5000", ":", ":x"])
_tag = st.sampled_from(["", ":26.0.0", ":latest", ":_x", ":.x", ":-x", ":" + "t" * 128, ":" + "t" * 129])
_digest = st.sampled_from(
    [
        "",
        "@sha256:" + "a" * 64,
        "@sha256:" + "A" * 64,
        "@sha256:" + "a" * 63,
        "@sha512:" + "0" * 128,
        "@sha384:" + "f" * 96,
        "@md5:" + "a" * 32,
        "@sha256:",
        "@@sha256:" + "a" * 64,
    ]
)


@settings(max_examples=1500)
@given(_name, _port, _name, _tag, _digest)
def test_the_pattern_and_the_parser_agree_on_near_references(
    first: str, port: str, rest: str, tag: str, digest: str
) -> None:
    for text in (f"{first}{port}/{rest}{tag}{digest}", f"{first}{tag}{digest}"):
        expected = grammar_accepts(text) and len(text) <= pt.IMAGE_MAX
        assert pattern_accepts(text) == expected, text
        assert field_accepts(text) == expected, text


@given(st.text(max_size=60))
def test_the_pattern_and_the_parser_agree_on_any_text(text: str) -> None:
    assert pattern_accepts(text) == grammar_accepts(text), text
    assert field_accepts(text) == grammar_accepts(text), text


@pytest.mark.parametrize(
    "text",
    [
        "not_an::image",
        "keycloak:26.8.0 ",
        "Quay.io/Keycloak/keycloak",  # the registry may hold upper case, a path may not
        "a_b.c/keycloak",  # a dotted first part is a registry, and this is not one
        "kc@md5:" + "a" * 32,  # the grammar allows it, no runtime pulls it
        "kc@sha256:" + "a" * 63,
        "kc:" + "t" * 129,
        "r.io/" + "p" * 251,  # a name of 256
        "r.io/" + "p" * 200 + ":" + "t" * 51,  # a reference of 256
    ],
)
def test_not_references_are_refused(text: str) -> None:
    assert not pattern_accepts(text) and not field_accepts(text)


@pytest.mark.parametrize(
    "text",
    [
        "quay.io/keycloak/keycloak:26.0.0",
        "keycloak",
        "localhost:5000/kc:26@sha256:" + "a" * 64,
        "[fd00::1]:5000/team/kc",
        "Registry.Example:443/a/b__c/d-e.f:T_1",
        "r.io/" + "p" * 250,  # a reference of 255
    ],
)
def test_references_are_accepted(text: str) -> None:
    assert pattern_accepts(text) and field_accepts(text) and grammar_accepts(text)
