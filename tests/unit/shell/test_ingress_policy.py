"""The installation's allow-lists for spec.ingress: which classes, annotation keys and hosts a Keycloak may
ask an ingress controller for, and what a Keycloak that asks for more gets."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from keycloak_operator import cli
from keycloak_operator.core import ingress, reconcile
from keycloak_operator.core.common import conditions
from keycloak_operator.core.ingress_policy import (
    DEFAULT_POLICY,
    REASON,
    IngressPolicy,
    annotation_allowed,
    host_allowed,
    refusal,
)
from keycloak_operator.kernel import names
from keycloak_operator.models.keycloak import KeycloakSpec
from tests.unit.builders import NOW, OWNER, fields_v1, observed, spec

HOSTNAME = {"hostname": "https://sso.example.com"}
SHARED = IngressPolicy(
    classes=("nginx",),
    annotation_keys=("nginx.ingress.kubernetes.io/*", "example.com/team"),
    host_suffixes=(".example.com", "login.other.org"),
)

labels = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?", fullmatch=True)
domains = st.lists(labels, min_size=1, max_size=4).map(".".join)


def kc(**ingress_fields: Any) -> KeycloakSpec:
    return spec(ingress=ingress_fields, hostname=HOSTNAME)


# --- matching ----------------------------------------------------------------------------------------------


@given(domains, domains)
def test_a_host_under_a_domain_matches_its_suffix(sub: str, domain: str) -> None:
    assert host_allowed(f"{sub}.{domain}", (f".{domain}",))


@given(labels, domains)
def test_a_label_that_only_ends_like_the_domain_does_not_match(label: str, domain: str) -> None:
    """`evil-example.com` is not under `.example.com`: the match is label by label."""
    assert not host_allowed(f"{label}-{domain}", (f".{domain}",))
    assert not host_allowed(f"{label}{domain}", (f".{domain}",))


@given(domains)
def test_a_suffix_does_not_match_the_domain_itself_and_an_exact_host_only_itself(domain: str) -> None:
    assert not host_allowed(domain, (f".{domain}",))
    assert host_allowed(domain, (domain,))
    assert not host_allowed(f"www.{domain}", (domain,))


@given(domains, domains, st.booleans(), st.booleans())
def test_case_and_a_final_dot_do_not_matter(sub: str, domain: str, upper: bool, dot: bool) -> None:
    host = f"{sub}.{domain}"
    entry = f".{domain}"
    shown_host = (host.upper() if upper else host) + ("." if dot else "")
    shown_entry = (entry if upper else entry.upper()) + ("" if dot else ".")
    assert host_allowed(shown_host, (shown_entry,))
    assert host_allowed(shown_host, (host.upper() + ".",))


def test_the_evil_twin_of_the_example() -> None:
    assert not host_allowed("evil-example.com", (".example.com",))
    assert not host_allowed("evil-example.com", ("example.com",))
    assert host_allowed("sso.example.com", (".example.com",))
    assert host_allowed("*.example.com", (".example.com",))  # every host it routes is under the domain
    assert not host_allowed("*.com", (".example.com",))


@given(domains, st.from_regex(r"[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?", fullmatch=True))
def test_an_annotation_prefix_covers_its_keys_only(prefix: str, name: str) -> None:
    entries = (f"{prefix}/*",)
    assert annotation_allowed(f"{prefix}/{name}", entries)
    assert not annotation_allowed(f"x{prefix}/{name}", entries)
    assert not annotation_allowed(f"{prefix}x/{name}", entries)
    assert not annotation_allowed(name, entries)


def test_exact_annotation_keys_match_exactly() -> None:
    assert annotation_allowed("example.com/team", ("example.com/team",))
    assert not annotation_allowed("example.com/teams", ("example.com/team",))
    assert not annotation_allowed("example.com/Team", ("example.com/team",))


@given(st.lists(st.text(max_size=20), max_size=3))
def test_empty_lists_restrict_nothing(keys: list[str]) -> None:
    for key in keys:
        assert annotation_allowed(key, ())
        assert host_allowed(key, ())
    anything = kc(className="anything", annotations={"a.b/c": "v"}, hosts=["x.y"])
    assert refusal(anything, DEFAULT_POLICY) is None


@pytest.mark.parametrize(
    "policy",
    [
        {"classes": ("Not_A_Class",)},
        {"annotation_keys": ("not a key",)},
        {"annotation_keys": ("*",)},
        {"annotation_keys": ("example.com*",)},
        {"host_suffixes": ("*.example.com",)},
        {"host_suffixes": ("https://example.com",)},
        {"host_suffixes": ("",)},
    ],
)
def test_entries_that_are_not_names_are_refused_at_start(policy: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="not a"):
        IngressPolicy(**policy)


def test_well_formed_entries_are_taken() -> None:
    assert SHARED.host_suffixes == (".example.com", "login.other.org")
    IngressPolicy(host_suffixes=("Example.COM.",), annotation_keys=("a.b/c", "plain"))


# --- what a spec asks for ----------------------------------------------------------------------------------


def test_a_spec_within_every_list_is_allowed() -> None:
    s = kc(
        className="nginx",
        annotations={"nginx.ingress.kubernetes.io/proxy-buffer-size": "128k", "example.com/team": "a"},
        hosts=["sso.example.com", "login.other.org"],
    )
    assert refusal(s, SHARED) is None


@pytest.mark.parametrize(
    ("fields", "field", "value"),
    [
        ({"className": "haproxy"}, "spec.ingress.className", "'haproxy'"),
        ({}, "spec.ingress.className", "unset"),
        (
            {"className": "nginx", "annotations": {"nginx.org/server-snippets": "x"}},
            "spec.ingress.annotations",
            "'nginx.org/server-snippets'",
        ),
        ({"className": "nginx", "hosts": ["evil-example.com"]}, "spec.ingress.hosts", "'evil-example.com'"),
        ({"className": "nginx", "hosts": ["*.other.org"]}, "spec.ingress.hosts", "'*.other.org'"),
    ],
)
def test_the_refusal_names_the_field_and_the_value(fields: dict[str, Any], field: str, value: str) -> None:
    refused = refusal(kc(**fields), SHARED)
    assert refused is not None and refused.field == field
    assert refused.message.startswith(f"{field}: ") and value in refused.message


def test_a_host_from_spec_hostname_is_checked_and_named_there() -> None:
    s = spec(ingress={"className": "nginx"}, hostname={"hostname": "https://sso.elsewhere.net"})
    refused = refusal(s, SHARED)
    assert refused is not None and refused.field == "spec.hostname.hostname"
    assert "'sso.elsewhere.net'" in refused.message


def test_no_ingress_asked_for_is_never_refused() -> None:
    assert refusal(spec(), SHARED) is None
    assert refusal(spec(ingress={"enabled": False, "className": "haproxy"}), SHARED) is None


# --- in the reconcile --------------------------------------------------------------------------------------

REFUSED = kc(className="haproxy", hosts=["sso.example.com"])


def decide(s: KeycloakSpec, existing: dict[str, Any] | None = None, **kw: Any) -> reconcile.Decision:
    return reconcile.decide(s, observed(s, ingress=existing, **kw), now=NOW, allowed_ingress=SHARED)


def stored(applied: dict[str, Any]) -> dict[str, Any]:
    obj = copy.deepcopy(applied)
    obj["metadata"]["uid"] = "ingress-uid"
    obj["metadata"]["managedFields"] = [
        {"manager": names.FIELD_MANAGER, "operation": "Apply", "fieldsV1": fields_v1(applied)}
    ]
    return obj


def kinds(objs: list[dict[str, Any]]) -> list[str]:
    return [o["kind"] for o in objs]


def degraded(decision: reconcile.Decision) -> dict[str, Any]:
    assert decision.status is not None
    return next(c for c in decision.status["conditions"] if c["type"] == conditions.DEGRADED)


def test_a_refused_ingress_is_not_made_and_the_keycloak_says_why() -> None:
    decision = decide(REFUSED)
    assert "Ingress" not in kinds(decision.apply)
    assert "Deployment" in kinds(decision.apply)  # the rest of the Keycloak goes on
    c = degraded(decision)
    assert (c["status"], c["reason"]) == ("True", REASON)
    assert c["message"].startswith("spec.ingress.className: 'haproxy'")
    assert [e.reason for e in decision.events if e.type == "Warning"] == [REASON]


def test_the_ingress_it_made_before_is_left_as_it_was() -> None:
    """Deleting it would take the sign-in page down over a policy change; applying would hand the
    controller what the installation refuses. Neither happens."""
    allowed = kc(className="nginx", hosts=["sso.example.com"])
    before = stored(ingress.ingress(allowed, OWNER) or {})
    decision = decide(REFUSED, before)
    assert "Ingress" not in kinds(decision.apply) and "Ingress" not in kinds(decision.delete)
    assert degraded(decision)["reason"] == REASON


def test_the_same_refusal_is_told_once() -> None:
    first = decide(REFUSED)
    assert first.status is not None
    again = reconcile.decide(
        REFUSED,
        observed(REFUSED, status=first.status),
        now=NOW,
        allowed_ingress=SHARED,
    )
    assert REASON not in [e.reason for e in again.events]


def test_once_allowed_the_ingress_is_made_and_the_keycloak_is_no_longer_degraded() -> None:
    allowed = kc(className="nginx", hosts=["sso.example.com"])
    decision = decide(allowed)
    assert "Ingress" in kinds(decision.apply)
    assert degraded(decision)["status"] == "False"


# --- from the command line ---------------------------------------------------------------------------------


def test_the_flags_fill_the_lists_and_none_given_restricts_nothing() -> None:
    args = cli.parser().parse_args(
        [
            "run",
            "--ingress-class=nginx",
            "--ingress-annotation-key=nginx.ingress.kubernetes.io/*",
            "--ingress-annotation-key=example.com/team",
            "--ingress-host=.example.com",
            "--ingress-host=login.other.org",
        ]
    )
    assert cli.ingress_policy(args) == SHARED
    assert cli.ingress_policy(cli.parser().parse_args(["run"])) == DEFAULT_POLICY
    with pytest.raises(ValueError, match="not a host name"):
        cli.ingress_policy(cli.parser().parse_args(["run", "--ingress-host=https://sso.example.com"]))


def test_a_stored_keycloak_whose_ingress_has_no_host_keeps_reconciling_without_it() -> None:
    """Stored before the CRD refused it (an upgrade of the operator): the Keycloak goes on, only its Ingress
    waits, Degraded naming spec.ingress.hosts, whatever the installation's lists say."""
    catch_all = spec(ingress={"className": "nginx"})
    decision = reconcile.decide(catch_all, observed(catch_all), now=NOW)
    assert "Ingress" not in kinds(decision.apply) and "Deployment" in kinds(decision.apply)
    c = degraded(decision)
    assert c["reason"] == REASON and c["message"].startswith("spec.ingress.hosts: an Ingress needs a host")
