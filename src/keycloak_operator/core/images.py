"""Container image references, parsed by the distribution reference grammar, and SemVer tags.

Never raises on any input: a reference that does not parse comes back as an ImageParseError, so a user's
typo becomes a clear condition instead of an operator crash.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# distribution/reference grammar, in pieces.
_ALNUM = r"[a-z0-9]+"
_SEPARATOR = r"(?:[._]|__|[-]+)"
_PATH_COMPONENT = rf"{_ALNUM}(?:{_SEPARATOR}{_ALNUM})*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[0-9a-fA-F:]+\])(?::[0-9]+)?"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"

_DOMAIN_RE = re.compile(rf"^{_DOMAIN}$")
_PATH_RE = re.compile(rf"^{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*$")
_TAG_RE = re.compile(rf"^{_TAG}$")
_DIGEST_RE = re.compile(rf"^{_DIGEST}$")
NAME_MAX = 255


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
        """What is written after the name: `tag`, `@digest` or `tag@digest`."""
        return (self.tag or "") + (f"@{self.digest}" if self.digest else "")

    def __str__(self) -> str:
        return self.name + (f":{self.tag}" if self.tag else "") + (f"@{self.digest}" if self.digest else "")


@dataclass(frozen=True)
class ImageParseError:
    reference: str
    message: str


def _looks_like_domain(component: str) -> bool:
    """The first component is a registry host only with a dot or a port, or as localhost (grammar rule)."""
    return "." in component or ":" in component or component == "localhost" or component.startswith("[")


def parse_image(reference: str) -> ImageReference | ImageParseError:
    if not isinstance(reference, str) or not reference:
        return ImageParseError(str(reference), "the image reference is empty")
    if reference != reference.strip():
        return ImageParseError(reference, "the image reference has surrounding white space")
    rest, digest = reference, None
    if "@" in rest:
        rest, digest = rest.rsplit("@", 1)
        if not _DIGEST_RE.match(digest):
            return ImageParseError(reference, f"invalid digest {digest!r}")
    tag = None
    slash = rest.rfind("/")
    colon = rest.rfind(":")
    if colon > slash:  # a colon after the last slash separates the tag; before it, it is a registry port
        rest, tag = rest[:colon], rest[colon + 1 :]
        if not _TAG_RE.match(tag):
            return ImageParseError(reference, f"invalid tag {tag!r}")
    domain, path = None, rest
    if "/" in rest:
        first, remainder = rest.split("/", 1)
        if _looks_like_domain(first):
            if not _DOMAIN_RE.match(first):
                return ImageParseError(reference, f"invalid registry host {first!r}")
            domain, path = first, remainder
    if not _PATH_RE.match(path):
        return ImageParseError(
            reference, f"invalid repository name {path!r} (lower case, digits and . _ - only)"
        )
    if len(f"{domain}/{path}" if domain else path) > NAME_MAX:
        return ImageParseError(reference, f"repository name longer than {NAME_MAX} characters")
    return ImageReference(domain=domain, path=path, tag=tag, digest=digest)


# --- SemVer 2.0.0 -----------------------------------------------------------------------------------------

_NUM = r"0|[1-9][0-9]*"
_PRE_ID = r"(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)"
_SEMVER_RE = re.compile(
    rf"^v?(?P<major>{_NUM})\.(?P<minor>{_NUM})\.(?P<patch>{_NUM})"
    rf"(?:-(?P<pre>{_PRE_ID}(?:\.{_PRE_ID})*))?"
    r"(?:\+(?P<build>[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$"
)


@dataclass(frozen=True)
class SemVer:
    major: int
    minor: int
    patch: int
    prerelease: str | None = None
    build: str | None = None


def parse_semver(tag: str | None) -> SemVer | None:
    """Strict SemVer 2.0.0, plus one allowance: a leading `v` (`v26.0.0`), which many registries use.

    `26` and `26.0` are not SemVer and return None: a moving short tag can point at any release of the line.
    Note that container tags cannot hold `+`, so build metadata only appears in tags written elsewhere.
    """
    if not tag:
        return None
    match = _SEMVER_RE.match(tag)
    if match is None:
        return None
    return SemVer(
        major=int(match["major"]),
        minor=int(match["minor"]),
        patch=int(match["patch"]),
        prerelease=match["pre"],
        build=match["build"],
    )
