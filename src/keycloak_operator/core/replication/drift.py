"""Drift: which declared fields an object in Keycloak no longer has as written (edited by hand there).

The content compared is what each kind declares (realm.py, client.py), whose list fields are sorted and
de-duplicated because Keycloak stores them as sets: a reordered list is no change, on either side.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Values Keycloak does not return at all: an empty string (a realm's passwordPolicy, a client's name), an
# empty list (a realm's supportedLocales) and 0 (a realm's eventsExpiration, "never"). Such a field absent
# from what Keycloak returns is in step.
OMITTED: tuple[Any, ...] = ("", [], 0)


def as_set(values: list[str]) -> list[str]:
    """A list field Keycloak keeps as a set, in the one order its content hash is taken in."""
    return sorted(set(values))


def drifted_fields(
    content: Mapping[str, Any],
    observed: Mapping[str, Any],
    subresources: tuple[str, ...] = (),
    *,
    attributes: bool = False,
) -> list[str]:
    """Fields of `content` whose observed value differs (lists compared as sets); the marker (`attributes`)
    and the kind's sub-resources (written by calls of their own) are checked elsewhere. With `attributes`
    (a kind that declares some: a client's PKCE, say), each declared attribute too, as `attributes.<key>`
    (one Keycloak leaves out holds ""). Sorted, for a stable event message."""
    changed = []
    declared_attributes = content.get("attributes")
    if attributes and isinstance(declared_attributes, Mapping):
        have_attributes = observed.get("attributes")
        have_map = have_attributes if isinstance(have_attributes, Mapping) else {}
        for key, want in declared_attributes.items():
            if (have_map.get(key) or "") != want:
                changed.append(f"attributes.{key}")
    for field, want in content.items():
        if field in ("attributes", *subresources):
            continue
        have = observed.get(field)
        if have is None and want in OMITTED and not isinstance(want, bool):  # False == 0 in Python
            continue  # Keycloak leaves out a field holding its empty value
        if isinstance(want, list):
            if not isinstance(have, list) or sorted(set(map(str, have))) != sorted(set(map(str, want))):
                changed.append(field)
        elif have != want:
            changed.append(field)
    return sorted(changed)
