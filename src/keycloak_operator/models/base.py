"""Common base for every CRD model: camelCase on the wire, snake_case in Python."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


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
