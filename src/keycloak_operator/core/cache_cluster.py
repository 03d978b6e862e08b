"""Chooses the JGroups cache cluster name (seed 000): clusterName > autoRevision > autoSuffix > none.

Honest by design: when the user asked for isolation and it cannot be derived deterministically (a moving
or digest-only tag), isolation is OFF and the result says so, with what to do. It never falls back to the
tag string silently.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from keycloak_operator.core import names
from keycloak_operator.core.images import ImageParseError, parse_image, parse_semver
from keycloak_operator.models.keycloak import CacheIsolation

Source = Literal["clusterName", "autoRevision", "autoSuffix", "none"]

_SET_CLUSTER_NAME = "set spec.cacheIsolation.clusterName to isolate this cluster explicitly"


@dataclass(frozen=True)
class CacheClusterResolution:
    name: str | None
    source: Source
    isolated: bool
    reason: str = ""
    warning: bool = False  # the user asked for isolation and did not get it


def _disabled(source: Source, reason: str) -> CacheClusterResolution:
    return CacheClusterResolution(
        None, source, False, f"{reason}: cache isolation is off; {_SET_CLUSTER_NAME}", warning=True
    )


def resolve_cache_cluster(keycloak: str, isolation: CacheIsolation, image: str) -> CacheClusterResolution:
    if isolation.cluster_name:
        return CacheClusterResolution(names.label_value(isolation.cluster_name), "clusterName", True)
    if not (isolation.auto_revision or isolation.auto_suffix):
        return CacheClusterResolution(None, "none", False)
    source: Source = "autoRevision" if isolation.auto_revision else "autoSuffix"
    ref = parse_image(image)
    if isinstance(ref, ImageParseError):
        return _disabled(source, f"image {image!r} does not parse ({ref.message})")
    if ref.tag is None:
        return _disabled(source, f"image {image!r} has no tag (digest-only references carry no version)")
    if source == "autoRevision":
        semver = parse_semver(ref.tag)
        if semver is None:
            return _disabled(source, f"tag {ref.tag!r} is not SemVer (autoRevision needs a tag like 26.0.1)")
        return CacheClusterResolution(names.label_value(f"{keycloak}-v{semver.major}"), source, True)
    return CacheClusterResolution(names.label_value(f"{keycloak}-{ref.tag}"), source, True)
