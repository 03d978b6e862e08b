"""KeycloakAuthenticationFlow: a top-level authentication flow of a realm, with its executions in order.

Executions are an ordered list: the declared order is the exact order in Keycloak. Each is either an
authenticator (a provider id, e.g. `auth-username-password-form`) or a subflow with executions of its own,
nested at most SUBFLOW_DEPTH deep. The schema spells each level out (a CRD schema cannot refer to itself), the
deepest level holding authenticators only.

Keycloak's built-in flows (`browser`, `direct grant`, ...) are Keycloak's: declaring one of their aliases is a
Conflict, never an adoption. A subflow's alias is a flow alias of the realm too, so it must be unique in the
realm, across every flow and subflow; one of Keycloak's own subflow or config aliases (BUILT_IN_SUBFLOWS,
BUILT_IN_CONFIGS) is refused here, as a second resource claiming the same one is a Conflict (the planner).

Script authenticators (provider ids `script-...`) are refused: they are deployed as jars, their executions
are listed under a provider id that is not the one added, so they would be rebuilt every round.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from keycloak_operator.kernel import names
from keycloak_operator.kernel import patterns as pt
from keycloak_operator.models.base import CrdModel
from keycloak_operator.models.client_settings import CONFIG_MAX, CONFIG_RULE, MapperConfig
from keycloak_operator.models.realm import RealmRef
from keycloak_operator.models.replicated import Column, ReplicatedKind, Schema

# A flow alias is in no URL, but Keycloak refuses some characters in it (ReservedCharValidator: '<', '>',
# '&', '"', '\'', ...); keep to a plain set.
ALIAS = r"^[A-Za-z0-9][-A-Za-z0-9_. ]*$"
ALIAS_MAX = 128
TEXT_MAX = 255
# An authenticator's provider id, as Keycloak names them (`auth-cookie`, `conditional-user-configured`).
PROVIDER = r"^[a-z0-9][-a-z0-9_.]*$"
PROVIDER_MAX = 128
EXECUTIONS_MAX = 32
# In a subflow: fewer, so that the API server's cost estimate of the config keys' CEL rule, multiplied through
# three levels of lists, stays within its budget (32 at every level exceeds it by about 1.5 times).
SUBFLOW_EXECUTIONS_MAX = 16
SUBFLOW_DEPTH = 2  # subflows inside the flow, and subflows inside those; the next level holds authenticators
# All executions of a flow, subflows and their steps counted: the list caps above allow thousands (a CEL rule
# counting across levels costs too much), and a rebuild writes each one about three times.
NODES_MAX = 64

# Keycloak's own flows in a new realm, top-level and subflows, and its own authenticator configs: read from
# a real 26.7.3 realm (tests/integration/test_realm_settings.py checks that a new realm holds no other) and
# from DefaultAuthenticationFlows (the organization ones; the "Conditional OTP" names of realms made before).
# Compared without case: a database with a case-insensitive collation would find them either way.
BUILT_IN_FLOWS = frozenset(
    {
        "browser",
        "direct grant",
        "registration",
        "reset credentials",
        "clients",
        "first broker login",
        "docker auth",
        "saml ecp",
    }
)
BUILT_IN_SUBFLOWS = frozenset(
    {
        "forms",
        "browser - conditional 2fa",
        "browser - conditional otp",
        "browser - conditional organization",
        "organization",
        "direct grant - conditional otp",
        "registration form",
        "reset - conditional otp",
        "user creation or linking",
        "handle existing account",
        "account verification options",
        "verify existing account by re-authentication",
        "first broker login - conditional 2fa",
        "first broker login - conditional otp",
        "first broker login - conditional organization",
    }
)
BUILT_IN_CONFIGS = frozenset(
    {
        "browser-conditional-credential",
        "first-broker-login-conditional-credential",
        "review profile config",
        "create unique user config",
    }
)
SCRIPT_PREFIX = "script-"

Requirement = Literal["REQUIRED", "ALTERNATIVE", "DISABLED", "CONDITIONAL"]
REQUIREMENT_TEXT = "REQUIRED, ALTERNATIVE, DISABLED or CONDITIONAL (a subflow whose conditions decide)."


def _alias(description: str) -> str:
    return Field(min_length=1, max_length=ALIAS_MAX, pattern=ALIAS, description=description)


class FlowRealmRef(RealmRef):
    namespace: str | None = pt.namespace_name(
        "Its namespace; defaults to the flow's (another one must list this namespace in its "
        "spec.flowNamespaces; only the realm's own namespace's flows can be bound).",
        default=None,
    )


class AuthenticatorConfig(CrdModel):
    """The authenticator's settings (Keycloak's authenticator config), every value a string."""

    alias: str = _alias("The config's alias, unique in the realm.")
    config: MapperConfig = Field(
        default_factory=dict,
        max_length=CONFIG_MAX,
        json_schema_extra={"maxProperties": CONFIG_MAX},
        description="Settings as the authenticator names them, e.g. `defaultOtpOutcome`.",
    )


class _Step(CrdModel):
    authenticator: str | None = Field(
        default=None,
        min_length=1,
        max_length=PROVIDER_MAX,
        pattern=PROVIDER,
        description="An authenticator's provider id, e.g. `auth-username-password-form`. Exactly one of "
        "authenticator and subflow.",
    )
    requirement: Requirement = Field(description=REQUIREMENT_TEXT)
    config: AuthenticatorConfig | None = Field(
        default=None, description="The authenticator's settings; authenticators only; absent: none."
    )

    @model_validator(mode="after")
    def _no_script(self) -> _Step:
        if self.authenticator is not None and self.authenticator.startswith(SCRIPT_PREFIX):
            raise ValueError(
                f"authenticator {self.authenticator!r}: script authenticators are not supported (they are "
                "deployed as jars; declare the flow that uses one by hand)"
            )
        if self.config is not None and self.config.alias.lower() in BUILT_IN_CONFIGS:
            raise ValueError(f"config alias {self.config.alias!r} is one of Keycloak's own")
        return self

    def _check(self, subflow: object) -> None:
        if (self.authenticator is None) == (subflow is None):
            raise ValueError("each execution is exactly one of authenticator and subflow")
        if subflow is not None and self.config is not None:
            raise ValueError("config belongs to an authenticator, not to a subflow")


class LeafExecution(_Step):
    """An authenticator in the deepest subflow."""

    authenticator: str = Field(
        min_length=1,
        max_length=PROVIDER_MAX,
        pattern=PROVIDER,
        description="An authenticator's provider id, e.g. `auth-otp-form`.",
    )


class _Subflow(CrdModel):
    """A subflow: a flow of the realm run as one execution of its parent."""

    alias: str = _alias("The subflow's alias: a flow alias of the realm, unique there.")
    provider_id: Literal["basic-flow", "form-flow"] = Field(
        default="basic-flow", description="basic-flow, or form-flow (a registration form's steps)."
    )
    description: str = Field(
        default="", max_length=TEXT_MAX, pattern=r"^[^\x00-\x1f\x7f]*$", description="Shown in the console."
    )

    @model_validator(mode="after")
    def _not_built_in(self) -> _Subflow:
        if self.alias.lower() in BUILT_IN_FLOWS | BUILT_IN_SUBFLOWS:
            raise ValueError(f"subflow alias {self.alias!r} is one of Keycloak's own flows")
        return self


class InnerSubflow(_Subflow):
    executions: list[LeafExecution] = Field(
        default_factory=list, max_length=SUBFLOW_EXECUTIONS_MAX, description="Its authenticators, in order."
    )


class InnerExecution(_Step):
    """An authenticator, or a subflow holding authenticators only."""

    subflow: InnerSubflow | None = Field(default=None, description="A subflow. Exactly one of the two.")

    @model_validator(mode="after")
    def _one(self) -> InnerExecution:
        self._check(self.subflow)
        return self


class OuterSubflow(_Subflow):
    executions: list[InnerExecution] = Field(
        default_factory=list, max_length=SUBFLOW_EXECUTIONS_MAX, description="Its executions, in order."
    )


class Execution(_Step):
    """An authenticator, or a subflow (which may hold one more level of subflows)."""

    subflow: OuterSubflow | None = Field(default=None, description="A subflow. Exactly one of the two.")

    @model_validator(mode="after")
    def _one(self) -> Execution:
        self._check(self.subflow)
        return self


class KeycloakAuthenticationFlowSpec(CrdModel):
    realm: FlowRealmRef = Field(description="The KeycloakRealm this flow belongs to.")
    alias: str = _alias(
        "The flow's alias, unique in the realm: the name bindings use. A built-in flow's (`browser`, "
        "`direct grant`, ...) or one held by a hand-made flow is a Conflict."
    )
    description: str = Field(
        default="", max_length=TEXT_MAX, pattern=r"^[^\x00-\x1f\x7f]*$", description="Shown in the console."
    )
    provider_id: Literal["basic-flow", "client-flow"] = Field(
        default="basic-flow", description="basic-flow, or client-flow (how clients authenticate)."
    )
    executions: list[Execution] = Field(
        default_factory=list,
        max_length=EXECUTIONS_MAX,
        description="The executions, in the exact order Keycloak runs them. A hand edit (order, "
        "requirement, an execution added or removed) is repaired.",
    )

    @model_validator(mode="after")
    def _unique_aliases(self) -> KeycloakAuthenticationFlowSpec:
        nodes = count_nodes(self.executions)
        if nodes > NODES_MAX:
            raise ValueError(
                f"spec.executions: {nodes} executions in all (subflows and their steps counted), at most "
                f"{NODES_MAX}"
            )
        seen = [self.alias, *subflow_aliases(self.executions)]
        if len(seen) != len(set(seen)):
            raise ValueError("the flow's and its subflows' aliases must differ: each is a flow alias")
        configs = config_aliases(self.executions)
        if len(configs) != len(set(configs)):
            raise ValueError("each authenticator config alias at most once")
        return self


def subflow_aliases(executions: list[Execution] | list[InnerExecution] | list[LeafExecution]) -> list[str]:
    out: list[str] = []
    for e in executions:
        sub = getattr(e, "subflow", None)
        if sub is not None:
            out.append(sub.alias)
            out.extend(subflow_aliases(sub.executions))
    return out


def config_aliases(executions: list[Execution] | list[InnerExecution] | list[LeafExecution]) -> list[str]:
    out: list[str] = []
    for e in executions:
        if e.config is not None:
            out.append(e.config.alias)
        sub = getattr(e, "subflow", None)
        if sub is not None:
            out.extend(config_aliases(sub.executions))
    return out


def count_nodes(executions: list[Execution] | list[InnerExecution] | list[LeafExecution]) -> int:
    """Every execution of a flow, at every level (a subflow and each of its steps)."""
    return sum(1 + count_nodes(getattr(getattr(e, "subflow", None), "executions", [])) for e in executions)


# Exactly one of authenticator and subflow at every level, and a config only on an authenticator.
_EXECUTION_RULES = [
    {
        "rule": "has(self.authenticator) != has(self.subflow)",
        "message": "each execution is exactly one of authenticator and subflow",
    },
    {
        "rule": "!has(self.config) || has(self.authenticator)",
        "message": "config belongs to an authenticator",
    },
]


def _schema_rules(schema: Schema) -> None:
    executions = schema["properties"]["spec"]["properties"]["executions"]["items"]
    inner = executions["properties"]["subflow"]["properties"]["executions"]["items"]
    for level in (executions, inner):
        level["x-kubernetes-validations"] = _EXECUTION_RULES
    for level in (executions, inner, inner["properties"]["subflow"]["properties"]["executions"]["items"]):
        level["properties"]["config"]["properties"]["config"]["x-kubernetes-validations"] = [CONFIG_RULE]


DECLARED = ReplicatedKind(
    kind=names.AUTHENTICATION_FLOW_KIND,
    plural=names.AUTHENTICATION_FLOW_PLURAL,
    short_name="kcflow",
    what="authentication flows",
    spec=KeycloakAuthenticationFlowSpec,
    description="An authentication flow, its executions in order, replicated into a Keycloak realm.",
    columns=(
        Column("Alias", ".spec.alias"),
        Column("Realm", ".spec.realm.name"),
        Column("Phase", ".status.phase"),
        Column("Provider", ".spec.providerId", priority=1),
    ),
    schema_rules=_schema_rules,
)
