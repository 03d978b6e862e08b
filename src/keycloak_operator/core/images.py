"""Container image references, parsed by the distribution reference grammar, and SemVer tags.

Never raises on any input: a reference that does not parse comes back as an ImageParseError, so a user's
typo becomes a clear condition instead of an operator crash. Decisions: docs/adr/0003.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The distribution reference grammar, in pieces. Character classes are spelled out: the grammar's `\w` is
# ASCII, Python's is Unicode. Every pattern is used with fullmatch, because `$` also matches before a
# trailing newline.
_ALNUM = r"[a-z0-9]+"
_SEPARATOR = r"(?:[._]|__|-+)"
_PATH_COMPONENT = rf"{_ALNUM}(?:{_SEPARATOR}{_ALNUM})*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_HOST = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[0-9a-fA-F:]+\])"
_DIGEST_ALGORITHM = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*"

_DOMAIN_RE = re.compile(rf"{_HOST}(?::[0-9]+)?")
_PATH_RE = re.compile(rf"{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*")
_TAG_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
_DIGEST_RE = re.compile(rf"(?P<algorithm>{_DIGEST_ALGORITHM}):(?P<hex>[0-9a-fA-F]{{32,}})")
# Registered algorithms fix the length and require lower case (OCI image spec, go-digest), which is what a
# runtime checks before pulling; any other algorithm is held to the grammar alone.
_REGISTERED_DIGEST_RE = {
    "sha256": re.compile(r"[a-f0-9]{64}"),
    "sha384": re.compile(r"[a-f0-9]{96}"),
    "sha512": re.compile(r"[a-f0-9]{128}"),
}
NAME_MAX = 255  # the grammar's limit on domain + "/" + path
_PRINTABLE_ASCII = re.compile(r"[!-~]+")


@dataclass(frozen=True)
class ImageReference:
    domain: str | None
    path: str
    tag: str | None
    digest: str | None

    @property
    def name(self) -> str:
        return f"{self.domain}/{self.path}" if self.domain else self.path

    @property
    def version(self) -> str:
        """What is written after the name: `tag`, `@digest` or `tag@digest`; empty when neither."""
        return (self.tag or "") + (f"@{self.digest}" if self.digest else "")

    def __str__(self) -> str:
        return self.name + (f":{self.tag}" if self.tag else "") + (f"@{self.digest}" if self.digest else "")


@dataclass(frozen=True)
class ImageParseError:
    reference: str
    message: str


def _looks_like_domain(component: str) -> bool:
    """Only a dot, a port or `localhost` makes the first component a registry (as Docker and containerd
    read it); `keycloak/keycloak` is a path on the default registry."""
    return "." in component or ":" in component or component == "localhost"


def _digest_problem(digest: str) -> str | None:
    match = _DIGEST_RE.fullmatch(digest)
    if match is None:
        return f"invalid digest {digest!r} (expected <algorithm>:<at least 32 hex digits>)"
    registered = _REGISTERED_DIGEST_RE.get(match["algorithm"])
    if registered is not None and not registered.fullmatch(match["hex"]):
        return f"invalid {match['algorithm']} digest {digest!r} (wrong length or not lower-case hex)"
    return None


def parse_image(reference: str) -> ImageReference | ImageParseError:
    if not isinstance(reference, str):  # defensive: a hand-written dict may hold anything
        return ImageParseError(type(reference).__name__, "the image reference is not a string")
    if not reference:
        return ImageParseError(reference, "the image reference is empty")
    if not _PRINTABLE_ASCII.fullmatch(reference):
        return ImageParseError(
            reference, "the image reference holds white space, control or non-ASCII characters"
        )
    rest, at, digest = reference.partition("@")
    if "@" in digest:
        return ImageParseError(reference, "more than one '@'")
    if at:
        problem = _digest_problem(digest)
        if problem is not None:
            return ImageParseError(reference, problem)
    tag = None
    slash, colon = rest.rfind("/"), rest.rfind(":")
    if colon > slash:  # a colon after the last slash starts the tag; before it, it is a registry port
        rest, tag = rest[:colon], rest[colon + 1 :]
        if not _TAG_RE.fullmatch(tag):
            return ImageParseError(reference, f"invalid tag {tag!r} (letters, digits, _ . -, at most 128)")
    domain, path = None, rest
    first, sep, remainder = rest.partition("/")
    if sep and _looks_like_domain(first):
        if not _DOMAIN_RE.fullmatch(first):
            return ImageParseError(reference, f"invalid registry host {first!r}")
        domain, path = first, remainder
    if not _PATH_RE.fullmatch(path):
        return ImageParseError(
            reference, f"invalid repository name {path!r} (lower case, digits, separators . _ __ - and /)"
        )
    if len(rest) > NAME_MAX:
        return ImageParseError(reference, f"image name longer than {NAME_MAX} characters")
    return ImageReference(domain=domain, path=path, tag=tag, digest=digest or None)


# --- SemVer 2.0.0 -----------------------------------------------------------------------------------------

_NUM = r"0|[1-9][0-9]*"
_PRE_ID = r"(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)"
_SEMVER_RE = re.compile(
    rf"v?(?P<major>{_NUM})\.(?P<minor>{_NUM})\.(?P<patch>{_NUM})"
    rf"(?:-(?P<pre>{_PRE_ID}(?:\.{_PRE_ID})*))?"
    r"(?:\+(?P<build>[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
)


@dataclass(frozen=True)
class SemVer:
    major: int
    minor: int
    patch: int
    prerelease: str | None = None
    build: str | None = None


DEFAULT_REGISTRY = "docker.io"
_DEFAULT_REGISTRY_ALIASES = frozenset({"docker.io", "index.docker.io"})  # as containerd and Docker read it


def repository(reference: str) -> str | None:
    """The fully qualified repository `reference` names, as a container runtime reports it
    (`keycloak` -> `docker.io/library/keycloak`); None when it does not parse."""
    ref = parse_image(reference)
    if isinstance(ref, ImageParseError):
        return None
    domain = ref.domain or DEFAULT_REGISTRY
    if domain in _DEFAULT_REGISTRY_ALIASES:
        domain = DEFAULT_REGISTRY
        if "/" not in ref.path:
            return f"{domain}/library/{ref.path}"
    return f"{domain}/{ref.path}"


def parse_semver(tag: str | None) -> SemVer | None:
    """Strict SemVer 2.0.0 (no leading zeros, MAJOR.MINOR.PATCH all present), plus one allowance: a
    lower-case leading `v` (`v26.0.0` is 26), a common spelling of the same version.

    `26`, `26.0`, `latest` and `nightly` return None: such tags move across releases, so they name no fixed
    version. Container tags cannot hold `+`, so build metadata only appears in versions written elsewhere.
    Never raises.
    """
    if not isinstance(tag, str):
        return None
    match = _SEMVER_RE.fullmatch(tag)
    if match is None:
        return None
    try:
        major, minor, patch = int(match["major"]), int(match["minor"]), int(match["patch"])
    except ValueError:  # Python refuses int() of more than 4300 digits; no real version comes close
        return None
    return SemVer(major, minor, patch, prerelease=match["pre"], build=match["build"])


def release_of(image: str) -> SemVer | None:
    """The release an image reference names: its tag read as SemVer; None when the reference does not
    parse or its tag names no fixed release (no tag, a digest only, `latest`, `26`). Never raises."""
    ref = parse_image(image)
    return None if isinstance(ref, ImageParseError) else parse_semver(ref.tag)
