"""The URLs a team sets that Keycloak itself calls: never its own pod's loopback (unless the operator allows
it, for tests), never a link-local address or a cloud's metadata service; one rule for identity providers
and clients alike."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from keycloak_operator.core.replication import identity_provider as idp
from keycloak_operator.core.replication.called_urls import host_refusal, url_problem
from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.in_realm import client_resource
from keycloak_operator.core.replication.resources import RealmTarget
from keycloak_operator.core.replication.sync import Resource
from keycloak_operator.kernel import names
from keycloak_operator.kernel import patterns as pt

T0 = datetime(2026, 1, 1, tzinfo=UTC)
REALM = ObjectKey(names.REALM_KIND, "team-a", "main")

LOOPBACK = [
    "http://127.0.0.1:9000/metrics",
    "https://127.0.0.1/x",
    "http://localhost/logout",
    "http://LOCALHOST./logout",
    "http://kc.localhost:8080/",
    "http://[::1]:9000/",
    "http://0.0.0.0:9000/",
    "http://127.1:9000/",  # spellings a resolver takes for 127.0.0.1
    "http://2130706433/",
    "http://0x7f.0.0.1/",
    "http://[::ffff:127.0.0.1]/",
]
NEVER = [
    "http://169.254.169.254/latest/meta-data/",
    "https://169.254.169.254/",
    "http://169.254.170.2/v2/credentials",
    "http://[fe80::1]/",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://Metadata.Google.Internal./",
    "http://[fd00:ec2::254]/latest/",
    "http://100.100.100.200/latest/",
    "http://2852039166/",  # 169.254.169.254
    "http://metadata/computeMetadata/v1/",  # the short names clouds give their metadata service
    "http://instance-data/latest/",
    "http://instance-data.ec2.internal/latest/",
]
FINE = [
    "https://web.example.com/logout",
    "http://web.team-a.svc.cluster.local:8080/logout",
    "http://10.0.0.5/logout",
    "https://[2001:db8::1]/logout",
    "https://localhost.example.com/logout",
]


@pytest.mark.parametrize("url", LOOPBACK)
def test_keycloaks_own_pod_only_when_the_operator_allows_it(url: str) -> None:
    assert "loopback" in (host_refusal(url, loopback_allowed=False) or "")
    assert host_refusal(url, loopback_allowed=True) is None


@pytest.mark.parametrize("url", NEVER)
def test_link_local_and_metadata_addresses_never(url: str) -> None:
    assert host_refusal(url, loopback_allowed=False) is not None
    assert "metadata" in (host_refusal(url, loopback_allowed=True) or "")


@pytest.mark.parametrize("url", FINE)
def test_other_hosts_are_the_namespaces_to_choose(url: str) -> None:
    assert host_refusal(url, loopback_allowed=False) is None


def test_the_refusal_names_the_field_and_holds_the_object() -> None:
    urls = [("a.first", None), ("a.second", ""), ("a.third", "http://localhost/"), ("a.fourth", NEVER[0])]
    v = url_problem(urls, loopback_allowed=False)
    assert v is not None and v.phase == "Error" and v.reason == "InsecureUrl" and not v.revocable
    assert v.message.startswith("spec.a.third: it names a loopback host")
    assert v.message.endswith("nothing was written")
    assert url_problem(urls[:2], loopback_allowed=False) is None


@given(st.text(max_size=80))
def test_any_text_is_judged_never_a_crash(text: str) -> None:
    host_refusal(text, loopback_allowed=False)
    host_refusal("http://" + text, loopback_allowed=False)


@given(st.from_regex(pt.HTTP_URL, fullmatch=True))
def test_any_url_the_crd_takes_is_judged_never_a_crash(url: str) -> None:
    refusal = host_refusal(url, loopback_allowed=False)
    assert refusal is None or isinstance(refusal, str)
    # The switch only ever lets more through.
    assert host_refusal(url, loopback_allowed=True) in (None, refusal)


# --- clients ------------------------------------------------------------------------------------------------


def targets() -> dict[ObjectKey, RealmTarget]:
    return {REALM: RealmTarget(Resource(REALM, "main", {}, T0), None, None, frozenset())}


def client(**spec: Any) -> dict[str, Any]:
    body = {"realm": {"name": "main"}, "clientId": "web", **spec}
    return {"kind": names.CLIENT_KIND, "metadata": {"namespace": "team-a", "name": "web"}, "spec": body}


@pytest.mark.parametrize("url", [*LOOPBACK, *NEVER])
def test_a_back_channel_logout_url_follows_the_rule(url: str) -> None:
    obj = client(logout={"backChannelUrl": url})
    r = client_resource(obj, targets())
    assert r.problem is not None and r.problem.reason == "InsecureUrl"
    assert r.problem.message.startswith("spec.logout.backChannelUrl: ")
    allowed = client_resource(obj, targets(), loopback_http=True).problem
    assert (allowed is None) == (url in LOOPBACK)


def test_a_saml_clients_back_channel_logout_url_follows_the_rule_its_browser_urls_do_not() -> None:
    def saml(**settings: str) -> Resource:
        return client_resource(client(clientId="urn:sp", protocol="saml", saml=settings), targets())

    refused = saml(singleLogoutServiceUrlPost="http://169.254.169.254/").problem
    assert refused is not None and refused.message.startswith("spec.saml.singleLogoutServiceUrlPost: ")
    browser = {
        "singleLogoutServiceUrlRedirect": "http://localhost:8080/slo",
        "assertionConsumerUrlPost": "http://localhost:8080/acs",
    }
    assert saml(**browser).problem is None


@pytest.mark.parametrize("url", FINE)
def test_a_client_with_a_fine_back_channel_url_is_written(url: str) -> None:
    assert client_resource(client(logout={"backChannelUrl": url}), targets()).problem is None


# --- identity providers: the same rule ----------------------------------------------------------------------

OIDC = {
    "authorizationUrl": "https://up.example.com/auth",
    "tokenUrl": "https://up.example.com/token",
    "clientId": "kc",
    "clientSecret": {"name": "upstream", "key": "client-secret"},
}


def provider(**oidc: str) -> dict[str, Any]:
    body = {"realm": {"name": "main"}, "alias": "up", "providerId": "oidc", "oidc": {**OIDC, **oidc}}
    return {"kind": idp.KIND, "metadata": {"namespace": "team-a", "name": "up"}, "spec": body}


def test_an_identity_providers_plain_http_is_refused_without_the_switch_whatever_its_host() -> None:
    # Not an address inet_aton reads, so not caught as loopback: still plain http, the secret in clear.
    for url in ("http://127.999.1.1/token", "http://127.0.0.1:9/token"):
        r = idp.idp_resource(provider(tokenUrl=url), targets())
        assert r.problem is not None and r.problem.reason == "InsecureUrl"
    assert (
        idp.idp_resource(provider(tokenUrl="http://127.0.0.1:9/token"), targets(), loopback_http=True).problem
        is None
    )


@pytest.mark.parametrize(
    ("url", "with_the_switch"),
    [
        ("https://127.0.0.1:9443/token", True),
        ("https://localhost/token", True),
        ("https://169.254.169.254/token", False),
        ("https://metadata.google.internal/token", False),
    ],
)
def test_an_identity_providers_urls_follow_the_same_rule(url: str, with_the_switch: bool) -> None:
    r = idp.idp_resource(provider(tokenUrl=url), targets())
    assert r.problem is not None and r.problem.reason == "InsecureUrl"
    assert r.problem.message.startswith("spec.oidc.tokenUrl: ")
    allowed = idp.idp_resource(provider(tokenUrl=url), targets(), loopback_http=True).problem
    assert (allowed is None) == with_the_switch
