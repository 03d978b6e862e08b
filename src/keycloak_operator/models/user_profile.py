"""A KeycloakRealm's user profile (spec.userProfile): the unmanaged-attribute policy and the extra
attributes the realm declares. Keycloak keeps the profile as one JSON document (GET/PUT
admin/realms/{r}/users/profile); the operator merges the declared attributes into it and keeps everything
else as Keycloak has it (core/replication/user_profile.py), so the built-in attributes (username, email,
firstName, lastName) can be neither declared nor removed here. Validations are a typed subset (length,
pattern, email) rather than Keycloak's open validator map: a validator id or config Keycloak does not know
fails the whole profile's PUT.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from keycloak_operator.kernel import names
from keycloak_operator.kernel import patterns as pt
from keycloak_operator.models.base import CrdModel

BUILT_IN_ATTRIBUTES = frozenset({"username", "email", "firstName", "lastName"})
ATTRIBUTES_MAX = 64
# Keycloak's attribute names go into forms and token claims: letters, digits, `.`, `_`, `-`.
ATTRIBUTE_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
NAME_MAX = 128
TEXT_MAX = 255
PATTERN_MAX = 1024
Who = Literal["admin", "user"]
NOT_BUILT_IN_RULE = {
    "rule": "!(self.name in ['username', 'email', 'firstName', 'lastName'])",
    "message": "userProfile.attributes: username, email, firstName and lastName are Keycloak's, kept as "
    "they are",
}
# The operator's marker attributes (core/replication/marker.py) are never a profile attribute: a user
# allowed to edit one could forge who owns what.
MARKER_PREFIX = names.ATTRIBUTE_PREFIX
NOT_MARKER_RULE = {
    "rule": f"!self.name.startsWith('{MARKER_PREFIX}')",
    "message": f"userProfile.attributes: names starting with {MARKER_PREFIX} are the operator's",
}
LENGTH_ORDER_RULE = {
    "rule": "!has(self.min) || !has(self.max) || self.min <= self.max",
    "message": "validations.length: min is at most max",
}


def _everyone() -> list[Who]:
    return ["admin", "user"]


def _admins() -> list[Who]:
    return ["admin"]


class LengthValidation(CrdModel):
    min: int | None = Field(default=None, ge=0, le=65535, description="Fewest characters.")
    max: int | None = Field(default=None, ge=1, le=65535, description="Most characters.")

    @model_validator(mode="after")
    def _ordered(self) -> LengthValidation:
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(LENGTH_ORDER_RULE["message"])
        return self


class PatternValidation(CrdModel):
    pattern: str = Field(
        min_length=1, max_length=PATTERN_MAX, pattern=pt.NO_CONTROL, description="A Java regular expression."
    )
    error_message: str | None = Field(
        default=None,
        max_length=TEXT_MAX,
        pattern=pt.NO_CONTROL,
        description="Shown when the value does not match (a message key or text).",
    )


class Validations(CrdModel):
    length: LengthValidation | None = Field(default=None, description="Length bounds.")
    pattern: PatternValidation | None = Field(default=None, description="A regular expression to match.")
    email: bool = Field(default=False, description="The value must be an e-mail address.")


class Permissions(CrdModel):
    view: list[Who] = Field(
        default_factory=_everyone,
        max_length=2,
        description="Who may see it.",
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )
    edit: list[Who] = Field(
        default_factory=_admins,
        max_length=2,
        description="Who may change it.",
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )


class ProfileAttribute(CrdModel):
    name: str = Field(
        min_length=1, max_length=NAME_MAX, pattern=ATTRIBUTE_NAME, description="The attribute's name."
    )
    display_name: str | None = Field(
        default=None, max_length=TEXT_MAX, pattern=pt.NO_CONTROL, description="Label on forms."
    )
    validations: Validations | None = Field(default=None, description="Checks of its value.")
    required_for: list[Who] | None = Field(
        default=None,
        # Not empty: Keycloak reads a `required` with neither roles nor scopes as required for everyone.
        min_length=1,
        max_length=2,
        description="Required when edited by these (admin, user); absent: optional; never empty.",
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )
    permissions: Permissions = Field(default_factory=Permissions, description="Who may view and edit it.")
    multivalued: bool = Field(default=False, description="Several values allowed.")
    group: str | None = Field(
        default=None,
        max_length=TEXT_MAX,
        pattern=ATTRIBUTE_NAME,
        description="An attribute group of the profile (e.g. user-metadata) it is shown under.",
    )

    @model_validator(mode="after")
    def _not_built_in(self) -> ProfileAttribute:
        if self.name in BUILT_IN_ATTRIBUTES:
            raise ValueError(NOT_BUILT_IN_RULE["message"])
        if self.name.startswith(MARKER_PREFIX):
            raise ValueError(NOT_MARKER_RULE["message"])
        return self


class UserProfile(CrdModel):
    unmanaged_attribute_policy: Literal["DISABLED", "ENABLED", "ADMIN_VIEW", "ADMIN_EDIT"] = Field(
        default="DISABLED",
        description="Attributes outside the profile: DISABLED (Keycloak's default), ENABLED, ADMIN_VIEW, "
        "ADMIN_EDIT.",
    )
    attributes: list[ProfileAttribute] = Field(
        default_factory=list,
        max_length=ATTRIBUTES_MAX,
        description="Attributes managed here, each name at most once; the others are left as they are.",
    )

    @model_validator(mode="after")
    def _once_each(self) -> UserProfile:
        names_ = [a.name for a in self.attributes]
        if len(names_) != len(set(names_)):
            raise ValueError("userProfile.attributes: each name at most once")
        return self
