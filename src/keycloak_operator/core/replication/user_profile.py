"""A realm's user profile: the declared attributes and policy merged into the one JSON document Keycloak
keeps (models/user_profile.py). Pure; the defaults writer (shell/replication/realm_defaults.py) reads the
document, and PUTs the merge when a managed part differs.

Only what the realm declares is managed: its attributes, replaced whole by name (added at the end when
new), and the unmanaged-attribute policy. Every other attribute (the built-in ones among them), the groups
and anything else in the document is sent back exactly as read. An attribute removed from the spec stays in
Keycloak, as a removed settings block does: the operator cannot tell it from one made by hand.

Seen on Keycloak 26.7.3: the PUT answers 200 with the document; an attribute reads back with exactly the
keys it was written with (no empty `annotations` or `group` added); the policy is the document's
`unmanagedAttributePolicy`, absent when DISABLED.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from keycloak_operator.models.user_profile import ProfileAttribute, UserProfile

USER_PROFILE: Final = "userProfile"
POLICY: Final = "unmanagedAttributePolicy"


def attribute(a: ProfileAttribute) -> dict[str, Any]:
    """An attribute as Keycloak's document holds it: only the keys that have a value."""
    out: dict[str, Any] = {"name": a.name}
    if a.display_name is not None:
        out["displayName"] = a.display_name
    validations: dict[str, Any] = {}
    if a.validations is not None:
        v = a.validations
        if v.length is not None:
            validations["length"] = {
                k: n for k, n in (("min", v.length.min), ("max", v.length.max)) if n is not None
            }
        if v.pattern is not None:
            validations["pattern"] = {"pattern": v.pattern.pattern}
            if v.pattern.error_message is not None:
                validations["pattern"]["error-message"] = v.pattern.error_message
        if v.email:
            validations["email"] = {}
    if validations:
        out["validations"] = validations
    if a.required_for is not None:
        out["required"] = {"roles": sorted(a.required_for)}
    out["permissions"] = {"view": sorted(a.permissions.view), "edit": sorted(a.permissions.edit)}
    out["multivalued"] = a.multivalued
    if a.group is not None:
        out["group"] = a.group
    return out


def profile_content(profile: UserProfile) -> dict[str, Any]:
    return {
        POLICY: profile.unmanaged_attribute_policy,
        "attributes": sorted((attribute(a) for a in profile.attributes), key=lambda a: a["name"]),
    }


def _normal(a: Any) -> Any:
    """An attribute for comparison: Keycloak keeps role lists in its own order."""
    if not isinstance(a, Mapping):
        return a
    out = dict(a)
    for key in ("required", "permissions"):
        part = out.get(key)
        if isinstance(part, Mapping):
            out[key] = {k: sorted(v) if isinstance(v, list) else v for k, v in part.items()}
    return out


def drift(declared: Mapping[str, Any], observed: Mapping[str, Any]) -> list[str]:
    """The managed parts of the document that differ: `userProfile.<name>` per attribute, and the policy."""
    out = []
    if observed.get(POLICY, "DISABLED") != declared[POLICY]:
        out.append(f"{USER_PROFILE}.{POLICY}")
    have: dict[str, list[Any]] = {}
    for a in observed.get("attributes") or []:
        name = a.get("name") if isinstance(a, Mapping) else None
        if isinstance(name, str):
            have.setdefault(name, []).append(_normal(a))
    for a in declared["attributes"]:
        if have.get(a["name"]) != [_normal(a)]:  # missing, different, or there twice
            out.append(f"{USER_PROFILE}.attributes[{a['name']}]")
    return out


def merged(declared: Mapping[str, Any], observed: Mapping[str, Any]) -> dict[str, Any]:
    """The document to PUT: what was read, with the declared attributes replaced (or appended) and the
    policy set; nothing else changed, nothing removed."""
    out = dict(observed)
    wanted = {a["name"]: a for a in declared["attributes"]}
    placed: set[str] = set()
    result = []
    for a in observed.get("attributes") or []:  # in Keycloak's order, whatever their shape
        name = a.get("name") if isinstance(a, Mapping) else None
        if not isinstance(name, str) or name not in wanted:
            result.append(a)
        elif name not in placed:  # a declared one in its place; a second of the same name goes
            result.append(wanted[name])
            placed.add(name)
    result.extend(a for a in declared["attributes"] if a["name"] not in placed)
    out["attributes"] = result
    if declared[POLICY] == "DISABLED":
        out.pop(POLICY, None)
    else:
        out[POLICY] = declared[POLICY]
    return out
