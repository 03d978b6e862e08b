"""Keycloak features and server options in the Keycloak resource: `spec.features` and
`spec.additionalOptions`, the way to pass any Keycloak option, a secret one included, without `spec.env`."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from keycloak_operator.kernel import patterns as pt
from keycloak_operator.models.base import CrdModel

# A feature as `kc.sh --features` takes it: `token-exchange`, or pinned to a version, `token-exchange:v1`.
FEATURE = r"^[a-z][a-z0-9-]*(:v[0-9]+)?$"
# A Keycloak option name as on the command line without `--`: `log-level`, `db-pool-max-size`,
# `spi-events-listener--jboss-logging--success-level` (26's SPI form: `--` between SPI, provider, property).
OPTION_NAME = r"^[a-z0-9]+(--?[a-z0-9]+)*$"
OPTION_NAME_MAX = 200
FEATURES_MAX = 64
SECRET_KEY = r"^[-._a-zA-Z0-9]+$"

Feature = Annotated[str, Field(min_length=1, max_length=64, pattern=FEATURE)]


class FeaturesSpec(CrdModel):
    """Keycloak features to turn on or off (`kc.sh --features` / `--features-disabled`)."""

    enabled: list[Feature] = Field(default_factory=list, max_length=FEATURES_MAX, description="Features on.")
    disabled: list[Feature] = Field(
        default_factory=list, max_length=FEATURES_MAX, description="Features off."
    )

    @model_validator(mode="after")
    def _not_both(self) -> FeaturesSpec:
        both = sorted(set(self.enabled) & set(self.disabled))
        if both:
            raise ValueError(f"features {', '.join(both)} are both enabled and disabled")
        return self


FEATURES_DISJOINT_RULE = {
    "rule": "!has(self.enabled) || !has(self.disabled) || !self.enabled.exists(f, f in self.disabled)",
    "message": "a feature cannot be both enabled and disabled",
}


class SecretKeySelector(CrdModel):
    """One key of a Secret in the Keycloak's namespace."""

    name: str = pt.object_name("Name of the Secret.")
    key: str = Field(min_length=1, max_length=pt.SUBDOMAIN_MAX, pattern=SECRET_KEY, description="Key in it.")


class AdditionalOption(CrdModel):
    """A Keycloak server option, given to the pods as its `KC_*` variable: a value, or a key of a Secret
    (the value never appears in the Deployment)."""

    name: str = Field(
        min_length=1,
        max_length=OPTION_NAME_MAX,
        pattern=OPTION_NAME,
        description="Option name without `--` (log-level, db-pool-max-size, spi-...). Options the operator "
        "sets itself (database, admin, cache, hostname, proxy, TLS, health) are refused: use their fields.",
    )
    value: str | None = Field(default=None, max_length=32768, description="The value.")
    secret: SecretKeySelector | None = Field(default=None, description="Or: the value from a Secret key.")

    @model_validator(mode="after")
    def _one_source(self) -> AdditionalOption:
        if (self.value is None) == (self.secret is None):
            raise ValueError(f"additionalOptions {self.name}: set exactly one of value or secret")
        return self


ONE_SOURCE_RULE = {
    "rule": "has(self.value) != has(self.secret)",
    "message": "set exactly one of value or secret",
}


def variable(option: str) -> str:
    """The environment variable Keycloak reads the option from (its documented mapping: upper case, `-`
    becomes `_`, so the SPI separator `--` becomes `__`)."""
    return "KC_" + option.upper().replace("-", "_")
