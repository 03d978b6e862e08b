"""Generates CustomResourceDefinitions from the pydantic models: the models are the one source of truth.

Pydantic emits JSON Schema with $refs and nullable unions; Kubernetes wants a structural OpenAPI v3 schema
with everything inlined. This module does that translation and adds what JSON Schema cannot say
(CEL validation rules, printer columns, subresources).
"""

from __future__ import annotations

from typing import Any

import yaml
from pydantic import BaseModel

from keycloak_operator.kernel import names
from keycloak_operator.kernel.patterns import DNS1035_LABEL
from keycloak_operator.models import (
    database_tls,
    extensions,
    hostname,
    network_policy,
    options,
    reserved_env,
    workload,
)
from keycloak_operator.models import http_route as http_route_model
from keycloak_operator.models import ingress as ingress_model
from keycloak_operator.models import keycloak as kc
from keycloak_operator.models.kinds import REPLICATED
from keycloak_operator.models.peering_crd import peering_crds
from keycloak_operator.models.replicated import ReplicatedKind, ReplicatedStatus

_DROP = {"title", "default"}


def structural_schema(model: type[BaseModel]) -> dict[str, Any]:
    raw = model.model_json_schema(by_alias=True, mode="validation")
    defs = raw.pop("$defs", {})
    return _convert(raw, defs)


def _convert(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in node:
        target = defs[node["$ref"].split("/")[-1]]
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return _convert(merged, defs)
    for key in ("anyOf", "oneOf"):
        if key in node:
            options = [o for o in node[key] if o.get("type") != "null"]
            rest = {k: v for k, v in node.items() if k != key}
            if len(options) == 1:
                return _convert({**options[0], **rest}, defs)
            raise ValueError(f"cannot express a union in a structural schema: {node}")
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROP:
            continue
        if key == "const":
            out["enum"] = [value]
        elif key == "properties":
            out["properties"] = {name: _convert(sub, defs) for name, sub in value.items()}
        elif key == "items":
            out["items"] = _convert(value, defs)
        elif key == "additionalProperties" and isinstance(value, dict):
            out["additionalProperties"] = _convert(value, defs)
        elif key == "additionalProperties":
            continue
        else:
            out[key] = value
    if "properties" in out:
        out.setdefault("type", "object")
    # The API server applies defaults for objects only when told to; keep defaults applied by the models.
    return out


def _column(name: str, path: str, type_: str = "string", priority: int = 0) -> dict[str, Any]:
    column: dict[str, Any] = {"name": name, "type": type_, "jsonPath": path}
    if priority:
        column["priority"] = priority
    return column


def _reserved_env_rule() -> dict[str, str]:
    """The CRD's copy of models/reserved_env.py's names, so the API server refuses them up front."""
    name = "self.name.upperAscii()"
    checks = [f"{name}.startsWith('{p}')" for p in reserved_env.RESERVED_ENV_PREFIXES]
    checks += [f"{name} == '{n}'" for n in reserved_env.RESERVED_ENV_NAMES]
    listed = [f"{p}*" for p in reserved_env.RESERVED_ENV_PREFIXES] + list(reserved_env.RESERVED_ENV_NAMES)
    return {
        "rule": f"!({' || '.join(checks)})",
        "message": "this variable is set by the operator (database, admin, cache isolation, hostname and "
        "proxy, TLS, JVM options; use the spec's fields); "
        f"reserved: {', '.join(listed)}",
        "fieldPath": ".name",
    }


def _reserved_option_rule() -> dict[str, str]:
    """additionalOptions: the variable an option becomes must not be one the operator sets."""
    name = "('KC_' + self.name.upperAscii().replace('-', '_'))"
    checks = [f"{name}.startsWith('{p}')" for p in reserved_env.RESERVED_ENV_PREFIXES]
    checks += [f"{name} == '{n}'" for n in reserved_env.RESERVED_ENV_NAMES]
    return {
        "rule": f"!({' || '.join(checks)})",
        "message": "this option is set by the operator (database, admin, cache, health, hostname and proxy, "
        "TLS, features): use the spec's field for it",
        "fieldPath": ".name",
    }


def keycloak_crd() -> dict[str, Any]:
    spec_schema = structural_schema(kc.KeycloakSpec)
    spec_schema["properties"]["database"].setdefault("x-kubernetes-validations", []).append(
        kc.DATABASE_EXACTLY_ONE_RULE
    )
    for tier in ("managed", "external"):
        tls = spec_schema["properties"]["database"]["properties"][tier]["properties"]["tls"]
        tls.setdefault("x-kubernetes-validations", []).append(database_tls.ROOT_CERT_RULE)
    spec_schema.setdefault("x-kubernetes-validations", []).extend(
        [kc.COPY_IMAGE_RULE, ingress_model.NO_HOST_RULE, http_route_model.NO_HOST_RULE]
    )
    # One entry per name (the API server refuses a Deployment with a variable twice).
    for listed in ("env", "additionalOptions"):
        spec_schema["properties"][listed].update(
            {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]}
        )
    env_items = spec_schema["properties"]["env"]["items"]
    env_items.setdefault("x-kubernetes-validations", []).extend(
        [_reserved_env_rule(), workload.ENV_VALUE_OR_SOURCE_RULE]
    )
    env_items["properties"]["valueFrom"].setdefault("x-kubernetes-validations", []).append(
        workload.ENV_SOURCE_RULE
    )
    volume_items = spec_schema["properties"]["volumes"]["items"]
    volume_items.setdefault("x-kubernetes-validations", []).extend(workload.VOLUME_RULES)
    jvm_items = spec_schema["properties"]["jvm"]["properties"]["options"]["items"]
    jvm_items.setdefault("x-kubernetes-validations", []).append(workload.jvm_reserved_rule())
    resources = spec_schema["properties"]["resources"]
    for kind in ("requests", "limits"):
        resources["properties"][kind].setdefault("x-kubernetes-validations", []).append(kc.RESOURCE_KEYS_RULE)
    resources.setdefault("x-kubernetes-validations", []).append(kc.FIXED_RESOURCES_RULE)
    spec_schema["properties"]["features"].setdefault("x-kubernetes-validations", []).append(
        options.FEATURES_DISJOINT_RULE
    )
    for listed in ("truststores", "extensions", "imagePullSecrets", "volumes"):
        spec_schema["properties"][listed].update(
            {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]}
        )
    spec_schema["properties"]["truststores"]["items"].setdefault("x-kubernetes-validations", []).append(
        extensions.TRUSTSTORE_ONE_SOURCE_RULE
    )
    option_items = spec_schema["properties"]["additionalOptions"]["items"]
    option_items.setdefault("x-kubernetes-validations", []).extend(
        [options.ONE_SOURCE_RULE, _reserved_option_rule()]
    )
    spec_schema["properties"]["hostname"].setdefault("x-kubernetes-validations", []).extend(
        hostname.HOSTNAME_RULES
    )
    hosts = spec_schema["properties"]["ingress"]["properties"]["hosts"]
    hosts["x-kubernetes-list-type"] = "set"
    hosts["items"].setdefault("x-kubernetes-validations", []).append(ingress_model.HOST_NOT_IP_RULE)
    route = spec_schema["properties"]["httpRoute"]["properties"]
    route["hostnames"]["x-kubernetes-list-type"] = "set"
    route["hostnames"]["items"].setdefault("x-kubernetes-validations", []).append(
        http_route_model.HOSTNAME_NOT_IP_RULE
    )
    policy = spec_schema["properties"]["networkPolicy"]["properties"]
    for peers in ("ingressFrom", "managementFrom"):
        peer = policy[peers]["items"]
        peer.setdefault("x-kubernetes-validations", []).append(network_policy.PEER_RULE)
        for selector in ("namespaceSelector", "podSelector"):
            expressions = peer["properties"][selector]["properties"]["matchExpressions"]["items"]
            expressions.setdefault("x-kubernetes-validations", []).append(network_policy.VALUES_RULE)
    status_schema = structural_schema(kc.KeycloakStatus)
    schema = {
        "type": "object",
        "description": "A Keycloak cluster run and upgraded by the operator.",
        "required": ["spec"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec_schema,
            "status": status_schema,
        },
        "x-kubernetes-validations": [
            {
                "rule": f"size(self.metadata.name) <= {names.MAX_KEYCLOAK_NAME}",
                "message": f"metadata.name must be at most {names.MAX_KEYCLOAK_NAME} characters, so that "
                "every derived Service name stays a valid DNS label",
            },
            {
                # Service names are DNS-1035 labels: `my.kc` or `1kc` would be refused in every child.
                "rule": f"self.metadata.name.matches('{DNS1035_LABEL}')",
                "message": "metadata.name must be a DNS-1035 label (lower-case letters, digits and '-', "
                "starting with a letter), because the Services made from it are",
            },
        ],
    }
    return _crd(
        plural=names.KEYCLOAK_PLURAL,
        kind=names.KEYCLOAK_KIND,
        short_names=["kcserver"],  # not `kc`: the official operator's Keycloak has it
        schema=schema,
        columns=[
            _column("Image", ".spec.image"),
            _column("Ready", ".status.readyReplicas", "integer"),
            _column("Replicas", ".spec.replicas", "integer"),
            _column("Phase", ".status.phase"),
            _column("Version", ".status.versions.currentVersion"),
            _column("Upgrade", ".status.blueGreen.state"),
            _column("Cache", ".status.cacheCluster.name", priority=1),
            _column("Age", ".metadata.creationTimestamp", "date"),
        ],
        scale={
            "specReplicasPath": ".spec.replicas",
            "statusReplicasPath": ".status.replicas",
            "labelSelectorPath": ".status.selector",
        },
    )


def _crd(
    *,
    plural: str,
    kind: str,
    short_names: list[str],
    schema: dict[str, Any],
    columns: list[dict[str, Any]],
    scale: dict[str, str] | None = None,
) -> dict[str, Any]:
    subresources: dict[str, Any] = {"status": {}}
    if scale:
        subresources["scale"] = scale
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{names.GROUP}"},
        "spec": {
            "group": names.GROUP,
            "scope": "Namespaced",
            "names": {
                "plural": plural,
                "singular": kind.lower(),
                "kind": kind,
                "listKind": f"{kind}List",
                "shortNames": short_names,
                "categories": ["kcop"],
            },
            "versions": [
                {
                    "name": names.VERSION,
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                    "subresources": subresources,
                    "additionalPrinterColumns": columns,
                }
            ],
        },
    }


def _replicated_schema(kind: ReplicatedKind) -> dict[str, Any]:
    schema = {
        "type": "object",
        "description": kind.description,
        "required": ["spec"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": structural_schema(kind.spec),
            "status": structural_schema(ReplicatedStatus),
        },
    }
    kind.schema_rules(schema)
    return schema


def replicated_crd(kind: ReplicatedKind) -> dict[str, Any]:
    """One replicated kind's CRD, from its declaration (models/replicated.py)."""
    return _crd(
        plural=kind.plural,
        kind=kind.kind,
        short_names=[kind.short_name],
        schema=_replicated_schema(kind),
        columns=[
            *(_column(c.name, c.path, c.type, c.priority) for c in kind.columns),
            _column("Age", ".metadata.creationTimestamp", "date"),
        ],
    )


def all_crds() -> list[dict[str, Any]]:
    return [
        keycloak_crd(),
        *(replicated_crd(k) for k in REPLICATED),
        *peering_crds(),
    ]


class _NoAliasDumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


def render_yaml() -> str:
    return yaml.dump_all(all_crds(), Dumper=_NoAliasDumper, sort_keys=False)
