"""spec.ingress: the Ingress in front of the public Service, its hosts, TLS and annotations, its life."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from keycloak_operator.core import children, drift, ingress, ingress_policy, reconcile, versions
from keycloak_operator.kernel import names
from keycloak_operator.kernel import patterns as pt
from keycloak_operator.models import crd
from keycloak_operator.models import ingress as ingress_model
from keycloak_operator.models.keycloak import KeycloakSpec
from tests.unit import builders
from tests.unit.builders import NOW, OWNER, fields_v1, observed

# The host every Ingress here routes unless a test lists its own: an Ingress needs one.
HOSTNAME = {"hostname": "https://sso.example.com"}


def spec(**fields: Any) -> KeycloakSpec:
    """builders.spec, with spec.hostname set whenever an Ingress is asked for and no hostname is given."""
    if "ingress" in fields:
        fields.setdefault("hostname", HOSTNAME)
    return builders.spec(**fields)


def render(s: KeycloakSpec) -> dict[str, Any]:
    rendered = ingress.ingress(s, OWNER)
    assert rendered is not None
    return rendered


def backends(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return [p["backend"] for rule in obj["spec"]["rules"] for p in rule["http"]["paths"]]


def test_no_ingress_unless_asked_and_none_when_disabled() -> None:
    assert ingress.ingress(spec(), OWNER) is None
    assert ingress.ingress(spec(ingress={"enabled": False, "className": "nginx"}), OWNER) is None
    assert ingress.ingress(spec(ingress={}), OWNER) is not None


def test_the_backend_is_the_public_service_by_its_serving_port() -> None:
    plain = render(spec(ingress={}))
    assert plain["metadata"]["name"] == names.ingress("kc") == "kc-keycloak"
    assert plain["apiVersion"] == "networking.k8s.io/v1"
    assert backends(plain) == [{"service": {"name": names.public_service("kc"), "port": {"name": "http"}}}]
    assert "annotations" not in plain["metadata"]
    (path,) = plain["spec"]["rules"][0]["http"]["paths"]
    assert (path["path"], path["pathType"]) == ("/", "Prefix")
    assert plain["metadata"]["ownerReferences"] == [OWNER.reference()]


def test_with_keycloak_serving_tls_the_ingress_speaks_https_to_it() -> None:
    for tls in ({"secret": "t"}, {"secret": "t", "httpEnabled": True}):
        secure = render(spec(ingress={}, tls=tls))
        assert backends(secure)[0]["service"]["port"] == {"name": "https"}
        assert secure["metadata"]["annotations"] == {ingress.BACKEND_PROTOCOL_ANNOTATION: "HTTPS"}
    # The user's annotation wins over the operator's.
    mine = render(
        spec(ingress={"annotations": {ingress.BACKEND_PROTOCOL_ANNOTATION: "GRPCS"}}, tls={"secret": "t"})
    )
    assert mine["metadata"]["annotations"] == {ingress.BACKEND_PROTOCOL_ANNOTATION: "GRPCS"}


def test_the_backend_port_is_one_the_public_service_has() -> None:
    for extra in ({}, {"tls": {"secret": "t"}}, {"tls": {"secret": "t", "httpEnabled": True}}):
        s = spec(ingress={}, **extra)
        service_ports = {p["name"] for p in children.public_service(OWNER, "a", s)["spec"]["ports"]}
        assert backends(render(s))[0]["service"]["port"]["name"] in service_ports


@pytest.mark.parametrize(
    ("hostname", "expected"),
    [
        ("https://sso.example.com", ["sso.example.com"]),
        ("https://SSO.Example.com:8443/auth", ["sso.example.com"]),
        ("sso.example.com", ["sso.example.com"]),
    ],
)
def test_hosts_default_to_the_host_of_spec_hostname(hostname: str, expected: list[str]) -> None:
    s = spec(ingress={}, hostname={"hostname": hostname})
    assert ingress.hosts(s) == expected
    rules = render(s)["spec"]["rules"]
    assert [r.get("host") for r in rules] == expected


def test_listed_hosts_win_over_the_hostname() -> None:
    s = spec(ingress={"hosts": ["a.example.com", "*.b.example.com"]}, hostname={"hostname": "sso.example"})
    assert [r["host"] for r in render(s)["spec"]["rules"]] == ["a.example.com", "*.b.example.com"]


@pytest.mark.parametrize(
    "fields",
    [
        {"ingress": {}},
        {"ingress": {"hosts": []}},
        {"ingress": {"className": "nginx"}},
        # An Ingress cannot route by an IP address: spec.hostname gives it no host.
        {"ingress": {}, "hostname": {"hostname": "10.0.0.1"}},
        {"ingress": {}, "hostname": {"hostname": "http://[::1]:8080"}},
    ],
)
def test_an_ingress_without_a_host_is_refused_naming_the_field(fields: dict[str, Any]) -> None:
    """A rule without a host would route every host the ingress controller serves to this Keycloak. Refused
    as the installation's allow-lists refuse (no Ingress, Degraded), whatever they say, not by the model: a
    Keycloak stored before the CRD's rule keeps reconciling, only its Ingress waits."""
    spec = builders.spec(**fields)
    found = ingress_policy.refusal(spec, ingress_policy.DEFAULT_POLICY)
    assert found is not None and found.message.startswith("spec.ingress.hosts: an Ingress needs a host")


def test_a_disabled_ingress_needs_no_host() -> None:
    assert ingress.ingress(builders.spec(ingress={"enabled": False}), OWNER) is None


def test_the_crd_refuses_an_ingress_without_a_host_on_the_spec() -> None:
    rules = crd.keycloak_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
        "x-kubernetes-validations"
    ]
    assert ingress_model.NO_HOST_RULE in rules
    assert ingress_model.NO_HOST_RULE["fieldPath"] == ".ingress.hosts"


def test_class_path_and_tls() -> None:
    s = spec(
        ingress={"className": "nginx", "path": "/auth", "tls": {"secretName": "sso-tls"}},
        hostname={"hostname": "https://sso.example.com"},
    )
    rendered = render(s)
    assert rendered["spec"]["ingressClassName"] == "nginx"
    assert rendered["spec"]["rules"][0]["http"]["paths"][0]["path"] == "/auth"
    assert rendered["spec"]["tls"] == [{"hosts": ["sso.example.com"], "secretName": "sso-tls"}]
    # TLS with the controller's default certificate.
    assert render(spec(ingress={"tls": {}}))["spec"]["tls"] == [{"hosts": ["sso.example.com"]}]
    assert "tls" not in render(spec(ingress={}))["spec"]
    assert "ingressClassName" not in render(spec(ingress={}))["spec"]


@pytest.mark.parametrize(
    "value",
    [
        {"hosts": ["10.0.0.1"]},
        {"hosts": ["SSO.example.com"]},
        {"hosts": ["sso.example.com/x"]},
        {"hosts": ["a.example", "a.example"]},
        {"path": "auth"},
        {"path": "/a?b"},
        # Segments the API server refuses in an Ingress path: the Ingress would be rejected.
        {"path": "/a//b"},
        {"path": "/a/../b"},
        {"path": "/a/./b"},
        {"path": "/."},
        {"path": "/a/.."},
        {"annotations": {f"example.com/a{i}": "v" for i in range(33)}},
        {"className": "Not_A_Class"},
        {"annotations": {"not a key": "x"}},
        {"tls": {"secretName": "../other"}},
    ],
)
def test_hostile_values_are_refused_naming_the_field(value: dict[str, Any]) -> None:
    with pytest.raises(ValidationError) as e:
        spec(ingress=value)
    assert "ingress" in str(e.value)


@pytest.mark.parametrize("path", ["/", "/auth", "/auth/", "/a/b-c_d~e", "/.well-known", "/...", "/a/..b"])
def test_ordinary_paths_are_accepted_as_written(path: str) -> None:
    assert render(spec(ingress={"path": path}))["spec"]["rules"][0]["http"]["paths"][0]["path"] == path


_HOST_CHARS = st.sampled_from("ab9-.*A_:/")  # "9.9.9.9" among them


@given(st.text(_HOST_CHARS, min_size=1, max_size=40))
def test_a_host_is_accepted_exactly_when_an_ingress_rule_can_carry_it(host: str) -> None:
    ok = (
        bool(re.fullmatch(ingress_model.INGRESS_HOST, host))
        and not re.fullmatch(ingress_model.IPV4, host)
        and len(host) <= pt.SUBDOMAIN_MAX
    )
    try:
        rendered = render(spec(ingress={"hosts": [host]}))
        accepted = True
    except ValidationError:
        accepted = False
    assert accepted == ok
    if accepted:
        assert rendered["spec"]["rules"][0]["host"] == host


@given(st.text(st.sampled_from("abz09-_./AZ"), min_size=1, max_size=70))
def test_annotation_keys_follow_the_label_key_pattern(key: str) -> None:
    ok = bool(re.fullmatch(pt.LABEL_KEY, key))
    try:
        spec(ingress={"annotations": {key: "v"}})
        accepted = True
    except ValidationError:
        accepted = False
    assert accepted == ok


def test_the_ingress_is_not_part_of_the_version() -> None:
    """Changing the way in must not start an upgrade, and a rollback keeps today's."""
    way_in = builders.spec(ingress={"className": "nginx", "hosts": ["sso.example.com"]})
    assert versions.spec_hash(way_in) == versions.spec_hash(builders.spec())
    assert versions.is_excluded("ingress.hosts")


# --- its life in the reconcile ------------------------------------------------------------------------------


def decide(s: KeycloakSpec, existing: dict[str, Any] | None) -> reconcile.Decision:
    return reconcile.decide(s, observed(s, ingress=existing), now=NOW)


def ingresses(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in objs if o["kind"] == "Ingress"]


def stored(applied: dict[str, Any]) -> dict[str, Any]:
    """As the API server returns it: uid, status, managedFields of the operator's apply."""
    obj = copy.deepcopy(applied)
    obj["metadata"]["uid"] = "ingress-uid"
    obj["metadata"]["managedFields"] = [
        {"manager": names.FIELD_MANAGER, "operation": "Apply", "fieldsV1": fields_v1(applied)}
    ]
    obj["status"] = {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}}
    return obj


def test_written_once_then_left_alone_and_deleted_when_disabled() -> None:
    s = spec(ingress={"className": "nginx", "annotations": {"a.example/x": "1"}})
    (written,) = ingresses(decide(s, None).apply)
    assert ingresses(decide(s, stored(written)).apply) == []
    off = decide(spec(ingress={"enabled": False}), stored(written))
    assert ingresses(off.apply) == [] and ingresses(off.delete) == [stored(written)]
    gone = decide(spec(), stored(written))
    assert ingresses(gone.delete) == [stored(written)]


def test_an_ingress_the_keycloak_did_not_make_is_neither_taken_over_nor_deleted() -> None:
    foreign = stored(render(spec(ingress={})))
    foreign["metadata"]["ownerReferences"] = [{**OWNER.reference(), "uid": "someone-else"}]
    assert ingresses(decide(spec(ingress={"className": "other"}), foreign).apply) == []
    assert ingresses(decide(spec(), foreign).delete) == []


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ({"className": "nginx"}, {}),
        ({"annotations": {"a.example/x": "1"}}, {}),
        ({"tls": {"secretName": "s"}}, {}),
        ({"hosts": ["a.example"]}, {}),
        ({"tls": {"secretName": "s"}, "hosts": ["a.example"]}, {"tls": {}}),
    ],
)
def test_taking_a_setting_out_is_a_change(before: dict[str, Any], after: dict[str, Any]) -> None:
    """Server-side apply removes what the operator no longer sets, but only if it applies: a field it set
    and no longer wants is drift."""
    was = stored(render(spec(ingress=before)))
    assert drift.needs_apply(render(spec(ingress=after)), was)


def test_an_annotation_another_writer_added_is_theirs() -> None:
    """An ingress controller or a person may annotate the Ingress: that is not drift (applying would not
    remove it, so it would write on every pass)."""
    was = stored(render(spec(ingress={})))
    was["metadata"]["annotations"] = {"other.example/note": "x"}
    assert not drift.needs_apply(render(spec(ingress={})), was)
