"""Chooses the JGroups cache cluster name (ADR 0003): clusterName > autoRevision > autoSuffix > none.

Honest by design: when the user asked for isolation and it cannot be derived deterministically (a moving,
non-SemVer or digest-only tag, or an image that does not parse), isolation is OFF and the result says so,
with what to do. It never falls back to the tag string, nor from autoRevision to autoSuffix. A resolved
name isolates on every version, because each pod discovers only pods of its own cache cluster (ADR 0018);
the reason says whether Keycloak's own name check holds too (from 26.7). Every name is a valid label value,
made so by names.label_value. Decisions: docs/adr/0003, 0018.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from keycloak_operator.core.images import ImageParseError, SemVer, parse_image, parse_semver, release_of
from keycloak_operator.core.releases import NAME_HONOURED_SINCE, line_of, line_text
from keycloak_operator.kernel import names
from keycloak_operator.models.cache_isolation import CacheIsolation

Source = Literal["clusterName", "autoRevision", "autoSuffix", "none"]

_WHY_MAX = 300
_SET_CLUSTER_NAME = "set spec.cacheIsolation.clusterName to isolate this cluster explicitly"


@dataclass(frozen=True)
class CacheClusterResolution:
    name: str | None
    source: Source
    isolated: bool
    reason: str = ""  # for people: how isolation holds, or why it is off; empty when none was asked
    warning: bool = False  # the user asked for isolation and did not get it


def _disabled(source: Source, why: str) -> CacheClusterResolution:
    if len(why) > _WHY_MAX:  # the image is the user's text, and the reason goes into status and events
        why = why[: _WHY_MAX - 1] + "…"
    return CacheClusterResolution(
        None, source, False, f"{source}: {why}; cache isolation is off, {_SET_CLUSTER_NAME}", True
    )


def _isolated(name: str, source: Source) -> CacheClusterResolution:
    return CacheClusterResolution(names.label_value(name), source, True)


_MEMBERSHIP = "each pod discovers only the pods of its own cache cluster"


def resolve_cache_cluster(
    keycloak_name: str, isolation: CacheIsolation, image: str, verified: str = ""
) -> CacheClusterResolution:
    """The name to render, and how it isolates. Discovery membership (a pod's discovery Service lists only
    its cache cluster's pods) isolates on every version; Keycloak's name check adds to it from 26.7.
    `verified`: the version the image's preflight read from its files (ADR 0024), which wins over the tag;
    without one the tag is all there is (ADR 0003: no version in it, no autoRevision)."""
    proved = parse_semver(verified) if verified else None
    resolved = _resolve(keycloak_name, isolation, image, proved)
    if not resolved.isolated:
        return resolved
    version = proved or release_of(image)
    since = line_text(NAME_HONOURED_SINCE)
    if isolation.stack_in_use == "jdbc-ping":
        return _by_database(resolved, version, image)
    if version is not None and line_of(version) >= NAME_HONOURED_SINCE:
        how = f"by name (Keycloak honours it from {since}) and by discovery membership: {_MEMBERSHIP}"
    elif version is not None:
        how = (
            f"by discovery membership only: {_MEMBERSHIP}; Keycloak {version.major}.{version.minor} ignores "
            f"the cluster name (honoured from {since})"
        )
    else:
        how = (
            f"by discovery membership: {_MEMBERSHIP}; the image {image!r} names no release, so whether "
            f"Keycloak honours the name too (from {since}) is unknown"
        )
    if len(how) > _WHY_MAX:
        how = how[: _WHY_MAX - 1] + "…"
    return CacheClusterResolution(resolved.name, resolved.source, True, f"{resolved.source}: isolated {how}")


def _by_database(
    resolved: CacheClusterResolution, version: SemVer | None, image: str
) -> CacheClusterResolution:
    """jdbc-ping finds peers in the database's `jgroups_ping` table by cluster name (ADR 0004, 0021): the
    name isolates where Keycloak honours it, and nothing does on one database where it does not."""
    since = line_text(NAME_HONOURED_SINCE)
    if version is not None and line_of(version) >= NAME_HONOURED_SINCE:
        how = f"by name: jdbc-ping finds peers by cluster name in the database (honoured from {since})"
        return CacheClusterResolution(
            resolved.name, resolved.source, True, f"{resolved.source}: isolated {how}"
        )
    release = (
        f"Keycloak {version.major}.{version.minor} ignores the cluster name"
        if version is not None
        else f"the image {image!r} names no release, so whether Keycloak honours the cluster name is unknown"
    )
    why = (
        f"stack jdbc-ping: {release} (honoured from {since}), so every node on one database joins one "
        "cluster; only separate databases (a database copy) keep blue and green apart; the kubernetes stack "
        "isolates by discovery membership"
    )
    if len(why) > _WHY_MAX:
        why = why[: _WHY_MAX - 1] + "…"
    return CacheClusterResolution(resolved.name, resolved.source, False, why, True)


def _resolve(
    keycloak_name: str, isolation: CacheIsolation, image: str, proved: SemVer | None = None
) -> CacheClusterResolution:
    if isolation.cluster_name:
        # The CRD pattern already makes it a label value; label_value leaves such a value as it is.
        return _isolated(isolation.cluster_name, "clusterName")
    if not (isolation.auto_revision or isolation.auto_suffix):
        return CacheClusterResolution(None, "none", False)
    source: Source = "autoRevision" if isolation.auto_revision else "autoSuffix"
    if source == "autoRevision" and proved is not None:
        return _isolated(f"{keycloak_name}-v{proved.major}", source)
    ref = parse_image(image)
    if isinstance(ref, ImageParseError):
        return _disabled(source, f"image {image!r} does not parse ({ref.message})")
    if ref.tag is None:
        return _disabled(source, f"image {image!r} has no tag, and a digest carries no version")
    if source == "autoSuffix":
        return _isolated(f"{keycloak_name}-{ref.tag}", source)
    semver = parse_semver(ref.tag)
    if semver is None:
        return _disabled(
            source,
            f"tag {ref.tag!r} is not a SemVer version like 26.0.1, so it names no fixed major version",
        )
    return _isolated(f"{keycloak_name}-v{semver.major}", source)
