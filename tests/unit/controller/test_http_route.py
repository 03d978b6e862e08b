"""spec.httpRoute: the Gateway API HTTPRoute beside the Ingress, what it routes, what the installation
allows of it, and its life in the reconcile (made, left alone, deleted; refused; where the API is not
served)."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from pydantic import ValidationError

from keycloak_operator import cli
from keycloak_operator.core import children, http_route, ingress, ingress_policy, reconcile, versions
from keycloak_operator.core.common import conditions
from keycloak_operator.core.ingress_policy import DEFAULT_POLICY, IngressPolicy
from keycloak_operator.kernel import names
from keycloak_operator.kernel import patterns as pt
from keycloak_operator.models import crd
from keycloak_operator.models import http_route as route_model
from keycloak_operator.models import ingress as ingress_model
from keycloak_operator.models.keycloak import KeycloakSpec
from tests.unit import builders
from tests.unit.builders import NOW, OWNER, fields_v1, observed

HOSTNAME = {"hostname": "https://sso.example.com"}
GATEWAY = {"name": "shared", "namespace": "gateways"}
SHARED = IngressPolicy(host_suffixes=(".example.com",), gateways=("gateways/shared", "ns/own"))

labels = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?", fullmatch=True)
domains = st.lists(labels, min_size=1, max_size=4).map(".".join)


def spec(**fields: Any) -> KeycloakSpec:
    """builders.spec, with spec.hostname set whenever a route is asked for and no hostname is given."""
    if "httpRoute" in fields or "ingress" in fields:
        fields.setdefault("hostname", HOSTNAME)
    return builders.spec(**fields)


def route(**fields: Any) -> dict[str, Any]:
    """spec.httpRoute attached to GATEWAY unless `fields` names its parents."""
    return {"parentRefs": [GATEWAY], **fields}


def render(s: KeycloakSpec) -> dict[str, Any]:
    rendered = http_route.http_route(s, OWNER)
    assert rendered is not None
    return rendered


# --- rendering ---------------------------------------------------------------------------------------------


def test_no_route_unless_asked_and_none_when_disabled() -> None:
    assert http_route.http_route(spec(), OWNER) is None
    assert http_route.http_route(spec(httpRoute=route(enabled=False)), OWNER) is None
    assert not http_route.wanted(spec(httpRoute=route(enabled=False)))
    assert http_route.wanted(spec(httpRoute=route()))


def test_the_route_attaches_to_its_gateways_and_sends_to_the_public_service() -> None:
    rendered = render(spec(httpRoute=route(parentRefs=[GATEWAY, {"name": "own", "sectionName": "https"}])))
    assert rendered["apiVersion"] == "gateway.networking.k8s.io/v1" and rendered["kind"] == "HTTPRoute"
    assert rendered["metadata"]["name"] == names.http_route("kc") == "kc-keycloak"
    assert rendered["metadata"]["namespace"] == "ns"
    assert rendered["metadata"]["ownerReferences"] == [OWNER.reference()]
    assert rendered["spec"]["parentRefs"] == [
        {"group": "gateway.networking.k8s.io", "kind": "Gateway", "namespace": "gateways", "name": "shared"},
        # An unset namespace is the Keycloak's, written out.
        {
            "group": "gateway.networking.k8s.io",
            "kind": "Gateway",
            "namespace": "ns",
            "name": "own",
            "sectionName": "https",
        },
    ]
    assert rendered["spec"]["hostnames"] == ["sso.example.com"]
    (rule,) = rendered["spec"]["rules"]
    assert rule["matches"] == [{"path": {"type": "PathPrefix", "value": "/"}}]
    assert rule["backendRefs"] == [
        {"group": "", "kind": "Service", "name": "kc-service", "port": children.HTTP_PORT, "weight": 1}
    ]
    assert "annotations" not in rendered["metadata"]


@pytest.mark.parametrize(
    "extra",
    [{}, {"tls": {"secret": "t"}}, {"tls": {"secret": "t", "httpEnabled": True}}],
    ids=["plain", "tls", "tls-and-http"],
)
@pytest.mark.parametrize("path", ["/", "/auth", "/realms/"])
def test_it_routes_exactly_what_the_ingress_routes(extra: dict[str, Any], path: str) -> None:
    """One rule for both ways in: the same path prefix to the same Service port, the serving one (HTTPS
    whenever Keycloak serves it), never the management port."""
    s = spec(httpRoute=route(path=path), ingress={"path": path}, **extra)
    (rule,) = render(s)["spec"]["rules"]
    ((ingress_path,),) = [r["http"]["paths"] for r in (ingress.ingress(s, OWNER) or {})["spec"]["rules"]]
    assert rule["matches"][0]["path"]["value"] == ingress_path["path"] == path
    service = children.public_service(OWNER, "a", s)
    by_name = {p["name"]: p["port"] for p in service["spec"]["ports"]}
    (backend,) = rule["backendRefs"]
    assert backend["name"] == ingress_path["backend"]["service"]["name"] == service["metadata"]["name"]
    assert backend["port"] == by_name[ingress_path["backend"]["service"]["port"]["name"]]
    assert backend["port"] not in (children.MANAGEMENT_PORT,)


def test_hostnames_default_to_the_host_of_spec_hostname_as_the_ingress_takes_it() -> None:
    for hostname in ("https://SSO.Example.com:8443/auth", "sso.example.com"):
        s = spec(httpRoute=route(), hostname={"hostname": hostname})
        assert http_route.hostnames(s) == ["sso.example.com"]
    # Listed hostnames win, and an Ingress's own hosts are not the route's.
    s = spec(
        httpRoute=route(hostnames=["a.example.com", "*.b.example.com"]), ingress={"hosts": ["c.example"]}
    )
    assert render(s)["spec"]["hostnames"] == ["a.example.com", "*.b.example.com"]
    assert http_route.hostnames(spec(httpRoute=route(), ingress={"hosts": ["c.example"]})) == [
        "sso.example.com"
    ]


def test_annotations_pass_as_written() -> None:
    rendered = render(spec(httpRoute=route(annotations={"b.example/x": "1", "a.example/y": "2"})))
    assert rendered["metadata"]["annotations"] == {"a.example/y": "2", "b.example/x": "1"}


def test_the_route_is_not_part_of_the_version() -> None:
    """Changing the way in must not start an upgrade, and a rollback keeps today's."""
    way_in = builders.spec(httpRoute=route(hostnames=["sso.example.com"]))
    assert versions.spec_hash(way_in) == versions.spec_hash(builders.spec())
    assert versions.is_excluded("httpRoute.parentRefs")


# --- hostile values ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        {"parentRefs": []},
        {"parentRefs": [{"name": f"g{i}"} for i in range(route_model.PARENT_REFS_MAX + 1)]},
        {"parentRefs": [{"name": "../other"}]},
        {"parentRefs": [{"name": "Gw"}]},
        {"parentRefs": [{"name": "gw", "namespace": "a.b"}]},
        {"parentRefs": [{"name": "gw", "namespace": "x" * 64}]},
        {"parentRefs": [{"name": "gw", "sectionName": "Not_A_Listener"}]},
        {"parentRefs": [{"name": "gw"}, {"name": "gw"}]},
        # The Gateway API refuses one Gateway twice unless each mention names its own listener.
        {"parentRefs": [{"name": "gw"}, {"name": "gw", "sectionName": "https"}]},
        {"parentRefs": [{"name": "gw", "sectionName": "a"}, {"name": "gw", "sectionName": "a"}]},
        {"path": "/" + "a" * route_model.PATH_MAX},
        {"hostnames": ["10.0.0.1"]},
        {"hostnames": ["SSO.example.com"]},
        {"hostnames": ["a.example", "a.example"]},
        {"hostnames": [f"h{i}.example" for i in range(ingress_model.HOSTS_MAX + 1)]},
        {"path": "auth"},
        {"path": "/a//b"},
        {"path": "/a/../b"},
        {"annotations": {"not a key": "x"}},
        {"annotations": {f"example.com/a{i}": "v" for i in range(ingress_model.ANNOTATIONS_MAX + 1)}},
    ],
)
def test_hostile_values_are_refused_naming_the_field(value: dict[str, Any]) -> None:
    with pytest.raises(ValidationError) as e:
        spec(httpRoute=route(**value))
    assert "httpRoute" in str(e.value)


def test_one_gateway_twice_with_a_listener_each_is_accepted() -> None:
    two = [
        {"name": "gw", "sectionName": "a"},
        {"name": "gw", "sectionName": "b"},
        {"name": "gw", "namespace": "x"},
    ]
    assert len(render(spec(httpRoute=route(parentRefs=two)))["spec"]["parentRefs"]) == 3


def test_a_gateway_named_twice_once_its_namespace_is_filled_in_is_refused_naming_the_field() -> None:
    """The model cannot know the Keycloak's namespace; the decision can, and refuses what the API server
    would (an apply it refuses would hold back the rest of the pass)."""
    twice = spec(httpRoute=route(parentRefs=[{"name": "gw"}, {"name": "gw", "namespace": "ns"}]))
    found = http_route.refusal(twice, DEFAULT_POLICY, "ns")
    assert found is not None and found.message.startswith("spec.httpRoute.parentRefs: Gateway 'gw'")
    assert http_route.refusal(twice, DEFAULT_POLICY, "other") is None


def test_parent_refs_are_required() -> None:
    with pytest.raises(ValidationError, match="parentRefs"):
        spec(httpRoute={"hostnames": ["sso.example.com"]})


_NAME_CHARS = st.sampled_from("ab9-.A_/")


@given(st.text(_NAME_CHARS, min_size=1, max_size=70), st.text(_NAME_CHARS, min_size=1, max_size=70))
def test_a_parent_is_accepted_exactly_when_kubernetes_names_allow_it(name: str, namespace: str) -> None:
    ok = (
        bool(re.fullmatch(pt.DNS1123_SUBDOMAIN, name))
        and bool(re.fullmatch(pt.DNS1123_LABEL, namespace))
        and len(namespace) <= pt.LABEL_MAX
    )
    try:
        rendered = render(spec(httpRoute=route(parentRefs=[{"name": name, "namespace": namespace}])))
        accepted = True
    except ValidationError:
        accepted = False
    assert accepted == ok
    if accepted:
        assert rendered["spec"]["parentRefs"][0]["name"] == name


@given(st.text(st.sampled_from("ab9-.*A_:/"), min_size=1, max_size=40))
def test_a_hostname_is_accepted_exactly_when_a_route_can_carry_it(host: str) -> None:
    ok = (
        bool(re.fullmatch(ingress_model.INGRESS_HOST, host))
        and not re.fullmatch(ingress_model.IPV4, host)
        and len(host) <= pt.SUBDOMAIN_MAX
    )
    try:
        rendered = render(spec(httpRoute=route(hostnames=[host])))
        accepted = True
    except ValidationError:
        accepted = False
    assert accepted == ok
    if accepted:
        assert rendered["spec"]["hostnames"] == [host]


def test_the_crd_refuses_a_route_without_a_host_and_an_ip_hostname() -> None:
    schema = crd.keycloak_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert route_model.NO_HOST_RULE in schema["x-kubernetes-validations"]
    hostnames = schema["properties"]["httpRoute"]["properties"]["hostnames"]
    assert route_model.HOSTNAME_NOT_IP_RULE in hostnames["items"]["x-kubernetes-validations"]
    assert hostnames["x-kubernetes-list-type"] == "set"

    def described(node: dict[str, Any], path: str) -> None:
        for key, child in (node.get("properties") or {}).items():
            assert child.get("description"), f"{path}.{key} has no description"
            described(child.get("items", child), f"{path}.{key}")

    described(schema["properties"]["httpRoute"], "spec.httpRoute")


# --- the installation's allow-lists ------------------------------------------------------------------------


def test_empty_lists_restrict_nothing() -> None:
    anything = spec(httpRoute=route(hostnames=["x.y"], parentRefs=[{"name": "any", "namespace": "where"}]))
    assert http_route.refusal(anything, DEFAULT_POLICY, "ns") is None


def test_an_allowed_gateway_and_host_pass() -> None:
    s = spec(httpRoute=route(parentRefs=[GATEWAY, {"name": "own"}]))
    assert http_route.refusal(s, SHARED, "ns") is None


@pytest.mark.parametrize(
    ("fields", "field", "value"),
    [
        (
            route(parentRefs=[{"name": "other", "namespace": "gateways"}]),
            "spec.httpRoute.parentRefs",
            "gateways/other",
        ),
        # An unset namespace is the Keycloak's: "own" in namespace ns2 is not ns/own.
        (route(parentRefs=[GATEWAY, {"name": "shared"}]), "spec.httpRoute.parentRefs", "ns/shared"),
        (route(hostnames=["sso.evil-example.com"]), "spec.httpRoute.hostnames", "'sso.evil-example.com'"),
        (route(hostnames=["*.com"]), "spec.httpRoute.hostnames", "'*.com'"),
    ],
)
def test_what_the_lists_do_not_allow_is_refused_naming_the_field(
    fields: dict[str, Any], field: str, value: str
) -> None:
    found = http_route.refusal(spec(httpRoute=fields), SHARED, "ns")
    assert found is not None
    assert found.message.startswith(f"{field}: ") and value in found.message
    assert "no HTTPRoute is created or changed" in found.message


def test_the_hostname_of_spec_hostname_is_judged_naming_that_field() -> None:
    s = spec(httpRoute=route(), hostname={"hostname": "https://sso.other.org"})
    found = http_route.refusal(s, SHARED, "ns")
    assert found is not None and found.message.startswith("spec.hostname.hostname: host 'sso.other.org'")


@pytest.mark.parametrize(
    "fields",
    [{"httpRoute": route()}, {"httpRoute": route(), "hostname": {"hostname": "10.0.0.1"}}],
    ids=["no-hostname", "ip-hostname"],
)
def test_a_route_without_a_host_is_refused_whatever_the_lists(fields: dict[str, Any]) -> None:
    found = http_route.refusal(builders.spec(**fields), DEFAULT_POLICY, "ns")
    assert found is not None
    assert found.message.startswith("spec.httpRoute.hostnames: an HTTPRoute needs a host")


@given(domains, labels)
def test_the_ingress_host_check_is_the_one_that_judges(domain: str, label: str) -> None:
    """One owner for the host rule: a host the Ingress would be refused, the route is refused, and the
    reverse; `evil-example.com` is not under `.example.com` for either."""
    policy = IngressPolicy(host_suffixes=(f".{domain}",))
    for host in (f"{label}.{domain}", f"{label}-{domain}", domain):
        assume(not re.fullmatch(ingress_model.IPV4, host))
        both = spec(httpRoute=route(hostnames=[host]), ingress={"hosts": [host]})
        assert (http_route.refusal(both, policy, "ns") is None) == (
            ingress_policy.refusal(both, policy) is None
        )


@given(labels, domains)
def test_a_gateway_entry_matches_only_its_namespace_and_name(namespace: str, name: str) -> None:
    policy = IngressPolicy(gateways=(f"{namespace}/{name}",))
    allowed = spec(httpRoute=route(parentRefs=[{"name": name, "namespace": namespace}]))
    assert http_route.refusal(allowed, policy, "elsewhere") is None
    other_ns = spec(httpRoute=route(parentRefs=[{"name": name, "namespace": f"{namespace}x"}]))
    assert http_route.refusal(other_ns, policy, "elsewhere") is not None
    other_name = spec(httpRoute=route(parentRefs=[{"name": f"{name}x", "namespace": namespace}]))
    assert http_route.refusal(other_name, policy, "elsewhere") is not None


@pytest.mark.parametrize(
    "entry", ["shared", "/shared", "ns/", "NS/shared", "a.b/shared", "ns/../x", "ns/a b", f"{'x' * 64}/g"]
)
def test_gateway_entries_that_are_not_namespace_slash_name_are_refused_at_start(entry: str) -> None:
    with pytest.raises(ValueError, match="not a Gateway"):
        IngressPolicy(gateways=(entry,))


def test_the_flag_fills_the_list() -> None:
    args = cli.parser().parse_args(["run", "--gateway=gateways/shared", "--gateway=ns/own"])
    assert cli.ingress_policy(args).gateways == ("gateways/shared", "ns/own")
    assert cli.ingress_policy(cli.parser().parse_args(["run"])).gateways == ()
    with pytest.raises(ValueError, match="not a Gateway"):
        cli.ingress_policy(cli.parser().parse_args(["run", "--gateway=shared"]))


# --- its life in the reconcile ------------------------------------------------------------------------------


def decide(
    s: KeycloakSpec,
    existing: dict[str, Any] | None = None,
    *,
    served: bool = True,
    policy: IngressPolicy = DEFAULT_POLICY,
    status: dict[str, Any] | None = None,
) -> reconcile.Decision:
    seen = observed(s, http_route=existing, http_route_served=served and http_route.wanted(s), status=status)
    return reconcile.decide(s, seen, now=NOW, allowed_ingress=policy)


def routes(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in objs if o["kind"] == "HTTPRoute"]


def stored(applied: dict[str, Any]) -> dict[str, Any]:
    """As the API server returns it: uid, status, managedFields of the operator's apply."""
    obj = copy.deepcopy(applied)
    obj["metadata"]["uid"] = "route-uid"
    obj["metadata"]["managedFields"] = [
        {"manager": names.FIELD_MANAGER, "operation": "Apply", "fieldsV1": fields_v1(applied)}
    ]
    obj["status"] = {"parents": [{"parentRef": applied["spec"]["parentRefs"][0], "controllerName": "x/y"}]}
    return obj


def degraded(decision: reconcile.Decision) -> dict[str, Any]:
    assert decision.status is not None
    return next(c for c in decision.status["conditions"] if c["type"] == conditions.DEGRADED)


def test_written_once_then_left_alone_and_deleted_when_disabled_or_removed() -> None:
    s = spec(httpRoute=route(annotations={"a.example/x": "1"}))
    (written,) = routes(decide(s).apply)
    assert written == render(s)
    assert routes(decide(s, stored(written)).apply) == []
    off = decide(spec(httpRoute=route(enabled=False)), stored(written))
    assert routes(off.apply) == [] and routes(off.delete) == [stored(written)]
    gone = decide(spec(), stored(written), served=False)
    assert routes(gone.delete) == [stored(written)]


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (route(parentRefs=[{**GATEWAY, "sectionName": "https"}]), route()),
        (route(annotations={"a.example/x": "1"}), route()),
        (route(hostnames=["a.example.com"]), route()),
        (route(path="/auth"), route()),
        (route(), route(parentRefs=[GATEWAY, {"name": "own"}])),
    ],
)
def test_a_change_is_applied(before: dict[str, Any], after: dict[str, Any]) -> None:
    old = stored(render(spec(httpRoute=before)))
    (written,) = routes(decide(spec(httpRoute=after), old).apply)
    assert written == render(spec(httpRoute=after))


def test_a_route_the_keycloak_did_not_make_is_neither_taken_over_nor_deleted() -> None:
    foreign = stored(render(spec(httpRoute=route())))
    foreign["metadata"]["ownerReferences"] = [{**OWNER.reference(), "uid": "someone-else"}]
    taken = decide(spec(httpRoute=route(hostnames=["x.example.com"])), foreign)
    assert routes(taken.apply) == []
    assert degraded(taken)["reason"] == "ChildNotOwned"
    assert routes(decide(spec(), foreign).delete) == []


def test_where_the_api_is_not_served_the_keycloak_says_so_and_runs() -> None:
    s = spec(httpRoute=route())
    decision = decide(s, served=False)
    assert routes(decision.apply) == [] and "Deployment" in [o["kind"] for o in decision.apply]
    c = degraded(decision)
    assert (c["status"], c["reason"]) == ("True", http_route.UNAVAILABLE)
    assert c["message"].startswith("spec.httpRoute: the cluster does not serve HTTPRoutes")
    assert [e.reason for e in decision.events if e.type == "Warning"] == [http_route.UNAVAILABLE]
    # Told once.
    again = decide(s, served=False, status=decision.status)
    assert http_route.UNAVAILABLE not in [e.reason for e in again.events]


def test_a_refused_route_is_not_made_the_one_made_before_is_left_and_the_rest_runs() -> None:
    allowed = spec(httpRoute=route())
    before = stored(render(allowed))
    refused = spec(httpRoute=route(parentRefs=[{"name": "other", "namespace": "gateways"}]))
    decision = decide(refused, before, policy=SHARED)
    assert routes(decision.apply) == [] and routes(decision.delete) == []
    assert "Deployment" in [o["kind"] for o in decision.apply]
    c = degraded(decision)
    assert (c["status"], c["reason"]) == ("True", http_route.REASON)
    assert c["message"].startswith("spec.httpRoute.parentRefs: Gateway gateways/other is not allowed")
    assert [e.reason for e in decision.events if e.type == "Warning"] == [http_route.REASON]
    # Allowed again: applied, and no longer Degraded.
    fixed = decide(spec(httpRoute=route(hostnames=["a.example.com"])), before, policy=SHARED)
    assert len(routes(fixed.apply)) == 1 and degraded(fixed)["status"] == "False"


def test_the_ingress_and_the_route_are_refused_apart() -> None:
    """Each way in is held back alone: a refused route leaves the Ingress made, and the reverse."""
    policy = IngressPolicy(classes=("nginx",), gateways=("gateways/shared",))
    both = spec(httpRoute=route(), ingress={"className": "haproxy"})
    kinds = [o["kind"] for o in decide(both, policy=policy).apply]
    assert "HTTPRoute" in kinds and "Ingress" not in kinds
    other = spec(httpRoute=route(parentRefs=[{"name": "x"}]), ingress={"className": "nginx"})
    kinds = [o["kind"] for o in decide(other, policy=policy).apply]
    assert "Ingress" in kinds and "HTTPRoute" not in kinds


def test_annotations_pass_the_annotation_key_list_where_the_installation_restricts_anything() -> None:
    """A Gateway controller reads a route's annotations as an Ingress controller reads an Ingress's: where
    any allow-list is set they pass the annotation-key list (none when it is empty), as the Service's do."""
    annotated = spec(httpRoute=route(annotations={"gateway.example/snippet": "x"}))
    assert http_route.refusal(annotated, DEFAULT_POLICY, "ns") is None
    found = http_route.refusal(annotated, SHARED, "ns")
    assert found is not None and found.message.startswith("spec.httpRoute.annotations: ")
    assert "allows no annotation keys" in found.message
    listed = IngressPolicy(gateways=SHARED.gateways, annotation_keys=("gateway.example/*",))
    assert http_route.refusal(annotated, listed, "ns") is None
    other = IngressPolicy(gateways=SHARED.gateways, annotation_keys=("other.example/*",))
    refused = http_route.refusal(annotated, other, "ns")
    assert refused is not None and "other.example/*" in refused.message
