"""Common base for every CRD model: camelCase on the wire, snake_case in Python; and the reference to a
Secret by name that several of them hold."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from keycloak_operator.kernel import patterns as pt


class CrdModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="ignore",
        frozen=True,
    )

    def wire(self) -> dict:
        """The object as the API server stores it: camelCase keys, defaults applied, None left out."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class SecretKeyRef(CrdModel):
    """A Secret in the Keycloak's namespace holding `username` and `password` keys."""

    name: str = pt.object_name("Name of the Secret.")
