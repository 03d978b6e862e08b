"""What an authentication flow holds: a KeycloakAuthenticationFlow's content (its executions flattened
depth-first, as Keycloak lists them), the same shape read back from Keycloak, and how the two compare (a
config value Keycloak masks cannot be compared). The planner (authentication_flow.py) and the build
(flow_build.py) work on this shape.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from keycloak_operator.models.authentication_flow import KeycloakAuthenticationFlowSpec

EXECUTIONS: Final = "executions"
MASKED: Final = "**********"  # what Keycloak returns for a config value it will not show

Obj = Mapping[str, Any]


def _steps(executions: Sequence[Any], level: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for e in executions:
        sub = getattr(e, "subflow", None)
        if sub is None:
            step: dict[str, Any] = {"level": level, "authenticator": e.authenticator}
            if e.config is not None:
                step["config"] = {"alias": e.config.alias, "config": dict(sorted(e.config.config.items()))}
            out.append({**step, "requirement": e.requirement})
        else:
            out.append(
                {
                    "level": level,
                    "subflow": sub.alias,
                    "providerId": sub.provider_id,
                    "description": sub.description,
                    "requirement": e.requirement,
                }
            )
            out.extend(_steps(sub.executions, level + 1))
    return out


def flow_content(spec: KeycloakAuthenticationFlowSpec) -> dict[str, Any]:
    """The flow as declared; its executions flattened depth-first, as Keycloak lists them (level, order)."""
    return {
        "alias": spec.alias,
        "description": spec.description,
        "providerId": spec.provider_id,
        "topLevel": True,
        "builtIn": False,
        EXECUTIONS: _steps(spec.executions, 0),
    }


def subflow_aliases(content: Obj) -> list[str]:
    return [str(s["subflow"]) for s in content.get(EXECUTIONS) or [] if "subflow" in s]


def config_aliases(content: Obj) -> list[str]:
    return [str(s["config"]["alias"]) for s in content.get(EXECUTIONS) or [] if s.get("config")]


# --- what Keycloak holds ------------------------------------------------------------------------------------


def observed_steps(listing: Iterable[Obj], configs: Mapping[str, Obj]) -> list[dict[str, Any]]:
    """A flow's executions as GET .../flows/{alias}/executions lists them (depth-first), in `flow_content`'s
    shape; `configs`: authenticator configs by id. A subflow's type is not in that listing: not compared."""
    out: list[dict[str, Any]] = []
    for e in listing:
        level = e.get("level")
        if e.get("authenticationFlow"):
            out.append(
                {
                    "level": level,
                    "subflow": e.get("displayName"),
                    "description": e.get("description") or "",
                    "requirement": e.get("requirement"),
                }
            )
            continue
        step: dict[str, Any] = {"level": level, "authenticator": e.get("providerId")}
        config = configs.get(str(e.get("authenticationConfig"))) if e.get("authenticationConfig") else None
        if config is not None:
            step["config"] = {
                "alias": config.get("alias"),
                "config": dict(sorted((config.get("config") or {}).items())),
            }
        out.append({**step, "requirement": e.get("requirement")})
    return out


def _comparable(steps: Sequence[Obj]) -> list[dict[str, Any]]:
    return [{k: v for k, v in s.items() if k != "providerId"} for s in steps]


def _unmasked(seen: dict[str, Any], want: Obj) -> dict[str, Any]:
    """`seen` with each config value Keycloak masks (a key its authenticator does not declare, or a secret
    one: read back as MASKED, checked on 26.7.3) taken as the declared one: it cannot be compared."""
    config, wanted = seen.get("config"), want.get("config")
    if not isinstance(config, Mapping) or not isinstance(wanted, Mapping):
        return seen
    values = {
        k: (wanted["config"].get(k, v) if v == MASKED else v) for k, v in (config.get("config") or {}).items()
    }
    return {**seen, "config": {**config, "config": values}}


def executions_differ(content: Obj, observed: Sequence[Obj]) -> bool:
    declared = _comparable(content.get(EXECUTIONS) or [])
    seen = _comparable(observed)
    if len(seen) == len(declared):
        seen = [_unmasked(s, d) for s, d in zip(seen, declared, strict=True)]
    return declared != seen
