"""Who may reach a Keycloak's pods: `spec.networkPolicy`. Peers are written as in a NetworkPolicy's `from`
(namespaceSelector, podSelector, ipBlock), so a user copies them from the policies they already have."""

from __future__ import annotations

import ipaddress
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from keycloak_operator.kernel import patterns as pt
from keycloak_operator.models.base import CrdModel
from keycloak_operator.models.hostname import CIDR
from keycloak_operator.models.scheduling import LabelValue, check_label_keys

MATCH_LABELS_MAX = 32
EXPRESSIONS_MAX = 16
VALUES_MAX = 64
PEERS_MAX = 32
EXCEPT_MAX = 32

Cidr = Annotated[str, Field(min_length=4, max_length=49, pattern=CIDR)]


class LabelSelectorRequirement(CrdModel):
    """One `matchExpressions` entry."""

    key: str = Field(
        min_length=1, max_length=pt.LABEL_KEY_MAX, pattern=pt.LABEL_KEY, description="Label key."
    )
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"] = Field(
        description="In, NotIn, Exists or DoesNotExist."
    )
    values: list[LabelValue] | None = Field(
        default=None, max_length=VALUES_MAX, description="In and NotIn: the values; otherwise none."
    )

    @model_validator(mode="after")
    def _values_match_the_operator(self) -> LabelSelectorRequirement:
        if self.operator in ("In", "NotIn") and not self.values:
            raise ValueError(f"matchExpressions {self.key}: {self.operator} needs values")
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            raise ValueError(f"matchExpressions {self.key}: {self.operator} takes no values")
        return self


VALUES_RULE = {
    "rule": "self.operator in ['In', 'NotIn'] ? has(self.values) && size(self.values) > 0 : "
    "!has(self.values) || size(self.values) == 0",
    "message": "In and NotIn need values; Exists and DoesNotExist take none",
}


class LabelSelector(CrdModel):
    """A label selector; empty (`{}`) selects everything."""

    match_labels: dict[str, LabelValue] | None = Field(
        default=None, max_length=MATCH_LABELS_MAX, description="Labels that must all match (key -> value)."
    )
    match_expressions: list[LabelSelectorRequirement] | None = Field(
        default=None, max_length=EXPRESSIONS_MAX, description="Requirements that must all hold."
    )

    @field_validator("match_labels")
    @classmethod
    def _label_keys(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        return check_label_keys(value, "a label")


class IpBlock(CrdModel):
    """Addresses outside the cluster's pods (a load balancer's, an operator run outside the cluster)."""

    cidr: Cidr = Field(description="A CIDR block, 10.0.0.0/8.")
    except_: list[Cidr] | None = Field(
        default=None, alias="except", max_length=EXCEPT_MAX, description="Blocks inside cidr left out."
    )

    @model_validator(mode="after")
    def _blocks_the_api_server_takes(self) -> IpBlock:
        """What the schema's pattern cannot say (its IPv6 part is loose) and the API server refuses in a
        NetworkPolicy: a block that does not parse, an `except` that is not a strict subset of `cidr`."""
        block = _network(self.cidr, "cidr")
        for text in self.except_ or []:
            inner = _network(text, "except")
            if (
                inner.version != block.version
                or inner.prefixlen <= block.prefixlen
                or inner.network_address not in block
            ):
                raise ValueError(f"except {text!r} is not a strict subset of cidr {self.cidr!r}")
        return self


def _network(text: str, what: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        raise ValueError(f"{what} {text!r} is not a CIDR block (10.0.0.0/8, fd00::/8)") from None


class NetworkPeer(CrdModel):
    """Sources allowed in, as a NetworkPolicy peer: ipBlock alone, or podSelector and/or namespaceSelector
    (both: those pods in those namespaces)."""

    ip_block: IpBlock | None = Field(default=None, description="Addresses that may connect.")
    namespace_selector: LabelSelector | None = Field(
        default=None,
        description="Namespaces whose pods may connect (`{}`: every namespace), e.g. "
        "`matchLabels: {kubernetes.io/metadata.name: ingress-nginx}`.",
    )
    pod_selector: LabelSelector | None = Field(
        default=None,
        description="Pods that may connect: in the Keycloak's namespace, or with namespaceSelector in those "
        "namespaces.",
    )

    @model_validator(mode="after")
    def _one_kind(self) -> NetworkPeer:
        selectors = self.pod_selector is not None or self.namespace_selector is not None
        if self.ip_block is not None and selectors:
            raise ValueError("a peer is ipBlock alone, or podSelector and/or namespaceSelector: not both")
        if self.ip_block is None and not selectors:
            raise ValueError("a peer needs ipBlock, podSelector or namespaceSelector")
        return self


PEER_RULE = {
    "rule": "has(self.ipBlock) ? !has(self.podSelector) && !has(self.namespaceSelector) : "
    "has(self.podSelector) || has(self.namespaceSelector)",
    "message": "a peer is ipBlock alone, or podSelector and/or namespaceSelector",
}


class NetworkPolicySpec(CrdModel):
    """NetworkPolicies `<name>-keycloak-<track>` over the server pods, one per Deployment track. JGroups
    (7800, and 57800 for failure detection) is allowed only from pods of this Keycloak in the same cache
    cluster (with isolation off: its pods without one), so blue and green of different cache clusters never
    reach each other; HTTP(S) only from `ingressFrom` and the operator's namespace; the management port
    (9000) only from `managementFrom`. Egress is not restricted. Not part of the version: a rollback keeps
    today's policy."""

    enabled: bool = Field(default=False, description="Make the NetworkPolicies (false: delete ours).")
    ingress_from: list[NetworkPeer] = Field(
        default_factory=list,
        max_length=PEERS_MAX,
        description="Who may reach Keycloak's HTTP(S) port besides the operator: the ingress controller "
        "(its namespace), applications that call Keycloak directly.",
    )
    management_from: list[NetworkPeer] = Field(
        default_factory=list,
        max_length=PEERS_MAX,
        description="Who may reach the management port 9000 (metrics, health): Prometheus, say. The "
        "kubelet's probes come from the node, which network policies do not restrict.",
    )
