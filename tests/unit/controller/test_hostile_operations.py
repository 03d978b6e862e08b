"""Hostile strings in the operations fields (spec.ingress, spec.monitoring.serviceMonitor and
spec.networkPolicy), held to test_hostile_input's standard: the model refuses a value, or the Ingress,
ServiceMonitor and NetworkPolicies made of it are valid for Kubernetes (Kubernetes' own rules, written out
here and there, never the project's patterns), and the CRD admits exactly what the model accepts.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given
from pydantic import ValidationError

from keycloak_operator.core import children, ingress, monitoring, network_policy
from keycloak_operator.models import ingress as ingress_model
from keycloak_operator.models.keycloak import KeycloakSpec
from tests.unit.models.test_hostile_input import (
    HOSTILE,
    KC_BASE,
    OWNER,
    PER_FIELD,
    Case,
    crd_admits,
    crd_schema_of,
    go_pattern,
    hostile_text,
    is_dns1035_label,
    is_label_value,
    is_port_name,
    is_qualified_name,
    is_subdomain,
    problems_of_keycloak,
    problems_of_labels,
    problems_of_object,
)

# --- Kubernetes' rules for these kinds (networking/validation, apimachinery), written out ------------------

_IPV4_SLOPPY = re.compile(r"[0-9]+(\.[0-9]+){3}")  # netutils.ParseIPSloppy: leading zeros allowed
_PATH_SEQUENCES = ("//", "/./", "/../", "%2f", "%2F")  # refused in an Exact or Prefix path
_PATH_SUFFIXES = ("/..", "/.")
_ANNOTATIONS_TOTAL_MAX = 256 * 1024
# The Prometheus Operator's Duration (its CRDs' pattern for a ServiceMonitor endpoint's interval).
_PROMETHEUS_DURATION = re.compile(
    r"0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?"
)


def is_ip(v: str) -> bool:
    if _IPV4_SLOPPY.fullmatch(v):
        return all(int(octet) <= 255 for octet in v.split("."))
    try:
        ipaddress.ip_address(v)
    except ValueError:
        return False
    return True


def is_ingress_host(v: object) -> bool:
    """A rule's or a TLS entry's host: a DNS subdomain, or `*.` and one (253 in all); never an IP."""
    if not isinstance(v, str) or len(v) > 253 or is_ip(v):
        return False
    return is_subdomain(v[2:] if v.startswith("*.") else v)


def is_prefix_path(v: object) -> bool:
    return (
        isinstance(v, str)
        and v.startswith("/")
        and not any(s in v for s in _PATH_SEQUENCES)
        and not v.endswith(_PATH_SUFFIXES)
    )


def is_cidr(v: object) -> bool:
    try:
        ipaddress.ip_network(str(v), strict=False)
    except ValueError:
        return False
    return isinstance(v, str)


def problems_of_selector(where: str, selector: Mapping[str, Any]) -> list[str]:
    out = problems_of_labels(where, selector.get("matchLabels") or {})
    for e in selector.get("matchExpressions") or []:
        values = e.get("values") or []
        if not is_qualified_name(e["key"]):
            out.append(f"{where}: matchExpressions key {e['key']!r}")
        if e["operator"] not in ("In", "NotIn", "Exists", "DoesNotExist"):
            out.append(f"{where}: operator {e['operator']!r}")
        if (e["operator"] in ("In", "NotIn")) != bool(values):
            out.append(f"{where}: {e['operator']} with values {values!r}")
        out += [f"{where}: value {v!r}" for v in values if not is_label_value(v)]
    return out


def problems_of_peer(where: str, peer: Mapping[str, Any]) -> list[str]:
    out = []
    block = peer.get("ipBlock")
    if block is not None:
        if len(peer) != 1 or not is_cidr(block["cidr"]):
            out.append(f"{where}: ipBlock {block!r} (alone, a CIDR)")
            return out
        outer = ipaddress.ip_network(block["cidr"], strict=False)
        for text in block.get("except") or []:
            inner = ipaddress.ip_network(text, strict=False) if is_cidr(text) else None
            if (
                inner is None
                or inner.version != outer.version
                or inner.network_address not in outer
                or inner.prefixlen <= outer.prefixlen
            ):
                out.append(f"{where}: except {text!r} is not a strict subset of {block['cidr']!r}")
    elif not peer:
        out.append(f"{where}: an empty peer")
    for part in ("podSelector", "namespaceSelector"):
        if part in peer:
            out += problems_of_selector(f"{where} {part}", peer[part])
    return out


def problems_of_operations_object(obj: Mapping[str, Any]) -> list[str]:
    """What the API server would refuse in the spec of one of these kinds (metadata: problems_of_object)."""
    kind, spec = obj["kind"], obj["spec"]
    where = f"{kind} {obj['metadata']['name']!r}"
    out = problems_of_object(obj)
    annotations = obj["metadata"].get("annotations") or {}
    if sum(len(k) + len(v) for k, v in annotations.items()) > _ANNOTATIONS_TOTAL_MAX:
        out.append(f"{where}: annotations over 256 KiB")
    if kind == "Ingress":
        if "ingressClassName" in spec and not is_subdomain(spec["ingressClassName"]):
            out.append(f"{where}: ingressClassName {spec['ingressClassName']!r}")
        for tls in spec.get("tls") or []:
            out += [f"{where}: tls host {h!r}" for h in tls.get("hosts") or [] if not is_ingress_host(h)]
            if "secretName" in tls and not is_subdomain(tls["secretName"]):
                out.append(f"{where}: tls secretName {tls['secretName']!r}")
        for rule in spec["rules"]:
            if "host" in rule and not is_ingress_host(rule["host"]):
                out.append(f"{where}: host {rule['host']!r}")
            for path in rule["http"]["paths"]:
                service = path["backend"]["service"]
                if path["pathType"] != "Prefix" or not is_prefix_path(path["path"]):
                    out.append(f"{where}: path {path['path']!r}")
                if not is_dns1035_label(service["name"]) or not is_port_name(service["port"]["name"]):
                    out.append(f"{where}: backend {service!r}")
    elif kind == "NetworkPolicy":
        out += problems_of_selector(f"{where} podSelector", spec["podSelector"])
        for i, rule in enumerate(spec["ingress"]):
            if not rule.get("from"):
                out.append(f"{where}: rule {i} lets every source in")
            out += [p for peer in rule.get("from") or [] for p in problems_of_peer(f"{where} rule {i}", peer)]
            out += [f"{where}: port {p!r}" for p in rule["ports"] if not 0 < p["port"] < 65536]
    elif kind == "ServiceMonitor":
        out += problems_of_selector(f"{where} selector", spec["selector"])
        for endpoint in spec["endpoints"]:
            if not is_port_name(endpoint["port"]):
                out.append(f"{where}: port {endpoint['port']!r}")
            if not _PROMETHEUS_DURATION.fullmatch(endpoint["interval"]):
                out.append(f"{where}: interval {endpoint['interval']!r}")
    return out


def operations_objects(spec: KeycloakSpec) -> list[dict[str, Any]]:
    """Everything these fields make: blue and green of different cache clusters, the kind served."""
    objs = [
        ingress.ingress(spec, OWNER),
        monitoring.service_monitor(spec, OWNER, crd_served=True),
        *network_policy.policies(spec, OWNER, {"a": "kc-v26", "b": None}, "operators"),
    ]
    return [o for o in objs if o is not None]


# --- the fields ------------------------------------------------------------------------------------------

OPS_BASE: dict[str, Any] = {
    **KC_BASE,
    "ingress": {
        "className": "nginx",
        "hosts": ["sso.example.com", "*.example.org"],
        "path": "/auth",
        "tls": {"secretName": "sso-tls"},
        "annotations": {"example.com/a": "1"},
    },
    "monitoring": {"serviceMonitor": {"enabled": True, "interval": "30s", "labels": {"release": "p"}}},
    "networkPolicy": {
        "enabled": True,
        "ingressFrom": [
            {
                "podSelector": {
                    "matchLabels": {"app": "web"},
                    "matchExpressions": [{"key": "tier", "operator": "In", "values": ["front"]}],
                }
            },
            {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}},
        ],
        "managementFrom": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "mon"}}}],
    },
}


@dataclass(frozen=True)
class OpsCase(Case):
    def problems(self, value: str) -> list[str]:
        try:
            spec = KeycloakSpec.model_validate(self.spec_with(value))
        except ValidationError:
            return []
        return problems_of_keycloak(spec) + [
            p for obj in operations_objects(spec) for p in problems_of_operations_object(obj)
        ]


def _case(path: tuple[str | int, ...]) -> OpsCase:
    return OpsCase(".".join(str(p) for p in path), KeycloakSpec, OPS_BASE, path)


_PEER = ("networkPolicy", "ingressFrom", 0, "podSelector")
_BLOCK = ("networkPolicy", "ingressFrom", 1, "ipBlock")
# Fields whose CRD schema says exactly what the model does (a pattern, a size cap, CEL rules known here).
CASES = [
    _case(("ingress", "className")),
    _case(("ingress", "hosts", 0)),
    _case(("ingress", "path")),
    _case(("ingress", "tls", "secretName")),
    _case(("monitoring", "serviceMonitor", "interval")),
    _case(("monitoring", "serviceMonitor", "labels", "release")),
    _case((*_PEER, "matchLabels", "app")),
    _case((*_PEER, "matchExpressions", 0, "key")),
    _case((*_PEER, "matchExpressions", 0, "values", 0)),
    _case(
        (
            "networkPolicy",
            "managementFrom",
            0,
            "namespaceSelector",
            "matchLabels",
            "kubernetes.io/metadata.name",
        )
    ),
]
# The model refuses more than the CRD can say: an IPv6 block the pattern admits but does not parse, `except`
# outside `cidr` (Degraded, InvalidSpec); annotation values are free text. Checked for what they make.
MODEL_STRICTER = [
    _case((*_BLOCK, "cidr")),
    _case((*_BLOCK, "except", 0)),
    _case(("ingress", "annotations", "example.com/a")),
]
# Keys of a mapping: only the models check them (a CEL rule over every key costs too much).
KEY_CASES = [
    _case(("ingress", "annotations", "*")),
    _case(("monitoring", "serviceMonitor", "labels", "*")),
    _case((*_PEER, "matchLabels", "*")),
]
ALL = CASES + MODEL_STRICTER + KEY_CASES


def crd_admits_with_rules(schema: Mapping[str, Any], value: str) -> bool:
    """crd_admits, and the CEL rules on the value that are of the form `!self.matches(r'...')`."""
    for rule in schema.get("x-kubernetes-validations") or []:
        m = re.fullmatch(r"!self\.matches\(r'(.*)'\)", rule["rule"])
        assert m, f"an unknown rule on a string field: {rule['rule']}"
        if re.search(go_pattern(m.group(1)), value):
            return False
    return crd_admits(schema, value)


@pytest.mark.parametrize("case", ALL, ids=[c.id for c in ALL])
def test_every_hostile_sample_is_refused_or_makes_valid_objects(case: OpsCase) -> None:
    found = {repr(v): p for v in HOSTILE if (p := case.problems(v))}
    assert not found, f"spec.{case.id} accepted values that make invalid objects: {found}"


@pytest.mark.parametrize("case", ALL, ids=[c.id for c in ALL])
@PER_FIELD
@given(value=hostile_text)
def test_generated_hostile_text_is_refused_or_makes_valid_objects(case: OpsCase, value: str) -> None:
    assert case.problems(value) == [], f"spec.{case.id} = {value!r}"


def test_the_base_spec_is_valid_and_makes_every_kind() -> None:
    """Otherwise every refusal above would prove nothing."""
    spec = KeycloakSpec.model_validate(OPS_BASE)
    objs = operations_objects(spec)
    assert sorted(o["kind"] for o in objs) == ["Ingress", "NetworkPolicy", "NetworkPolicy", "ServiceMonitor"]
    assert [p for o in objs for p in problems_of_operations_object(o)] == []
    assert problems_of_keycloak(spec) == []
    service = children.public_service(OWNER, "a", spec)
    assert [p["name"] for p in service["spec"]["ports"]] == ["http", children.MANAGEMENT_PORT_NAME]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_crd_carries_a_pattern_and_a_size_cap_for_every_field(case: OpsCase) -> None:
    schema = crd_schema_of(case)
    assert schema.get("pattern"), f"spec.{case.id} has no pattern in the CRD"
    assert schema.get("maxLength"), f"spec.{case.id} has no maxLength in the CRD"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
@PER_FIELD
@given(value=hostile_text)
def test_the_crd_admits_exactly_what_the_model_accepts(case: OpsCase, value: str) -> None:
    schema = crd_schema_of(case)
    assert crd_admits_with_rules(schema, value) == case.accepts(value), f"spec.{case.id} = {value!r}"


@pytest.mark.parametrize("case", CASES + MODEL_STRICTER, ids=[c.id for c in CASES + MODEL_STRICTER])
def test_the_crd_never_refuses_a_hostile_sample_the_model_accepts(case: OpsCase) -> None:
    schema = crd_schema_of(case)
    refused = [v for v in HOSTILE if case.accepts(v) and not crd_admits_with_rules(schema, v)]
    assert not refused, f"spec.{case.id}: the CRD refuses what the model accepts: {refused}"


def test_the_most_annotations_the_model_accepts_fit_in_one_ingress() -> None:
    """The API server refuses an object whose annotations exceed 256 KiB together; the caps keep the largest
    spec the model accepts (every key and value at its longest, plus the operator's own) inside that."""
    longest = {
        f"{'a' * 253}/{i:02d}{'b' * 61}": "v" * ingress_model.ANNOTATION_VALUE_MAX
        for i in range(ingress_model.ANNOTATIONS_MAX)
    }
    spec = KeycloakSpec.model_validate(
        {**KC_BASE, "tls": {"secret": "tls"}, "ingress": {"annotations": longest, "hosts": ["sso.example"]}}
    )
    rendered = ingress.ingress(spec, OWNER)
    assert rendered is not None and len(rendered["metadata"]["annotations"]) == len(longest) + 1
    assert problems_of_operations_object(rendered) == []
    with pytest.raises(ValidationError):
        KeycloakSpec.model_validate(
            {**KC_BASE, "ingress": {"annotations": {**longest, "one/more": "x"}, "hosts": ["sso.example"]}}
        )
