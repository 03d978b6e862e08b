"""Tenant isolation in the pure core: server URLs, the allow-list, whose login acts, orphans, revocation."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from keycloak_operator.core.replication import ObjectKey, marked
from keycloak_operator.core.replication.client import plan_clients
from keycloak_operator.core.replication.realm import blocked_realm_deletes, plan_realms
from keycloak_operator.core.replication.resources import (
    Credentials,
    RealmTarget,
    Server,
    acting_credentials,
    realm_target,
    server_url,
)
from keycloak_operator.core.replication.servers import ServerPolicy, host_allowed, normalize_url
from keycloak_operator.core.replication.status import render
from keycloak_operator.core.replication.sync import Disable, Resource, Revocation, Verdict, settle
from keycloak_operator.kernel import names

T0 = datetime(2026, 1, 1, tzinfo=UTC)
REALM, CLIENT = names.REALM_KIND, names.CLIENT_KIND
GRACE = timedelta(hours=1)
FORBIDDEN = Verdict("Forbidden", "NamespaceNotAllowed", "not allowed")


def realm(ns: str, name: str, **flags: Any) -> Resource:
    return Resource(ObjectKey(REALM, ns, name), name, {"realm": name, "enabled": True}, T0, **flags)


def client(ns: str, name: str, **flags: Any) -> Resource:
    content = {"clientId": name, "enabled": True}
    return Resource(
        ObjectKey(CLIENT, ns, name), name, content, T0, parent=ObjectKey(REALM, "home", "r"), **flags
    )


def stored(r: Resource, remote: str, **fields: Any) -> dict[str, Any]:
    """How Keycloak returns the object the operator wrote for `r`."""
    return {**marked(r.content, r.key), "id": remote, **fields}


def k8s_realm(ns: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"kind": REALM, "metadata": {"namespace": ns, "name": name}, "spec": spec}


# --- server URLs and the allow-list -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spelling", "normal"),
    [
        ("https://sso.example.com", "https://sso.example.com"),
        ("HTTPS://SSO.Example.COM/", "https://sso.example.com"),
        ("https://sso.example.com:443", "https://sso.example.com"),
        ("http://sso:80/", "http://sso"),
        ("http://sso:8080/auth/", "http://sso:8080/auth"),
        ("http://[::1]:8080", "http://[::1]:8080"),
    ],
)
def test_two_spellings_of_one_server_give_one_url(spelling: str, normal: str) -> None:
    assert normalize_url(spelling) == normal


@pytest.mark.parametrize(
    "url", ["ftp://sso", "https://user:pw@sso", "https://sso/?next=x", "https://sso/#x", "https://", "sso"]
)
def test_anything_but_a_plain_http_url_is_refused(url: str) -> None:
    assert normalize_url(url) is None


@given(st.text(max_size=60))
def test_a_normalised_url_is_a_fixed_point(text: str) -> None:
    once = normalize_url("http://" + text)
    if once is not None:
        assert normalize_url(once) == once


@pytest.mark.parametrize(
    ("hosts", "url", "allowed"),
    [
        ((), "https://anything.example", True),
        (("sso.example.com",), "https://sso.example.com", True),
        (("sso.example.com",), "https://sso.example.com.", True),
        (("sso.example.com",), "https://evil.example.com", False),
        (("*.example.com",), "https://a.example.com", True),
        (("*.example.com",), "https://example.com", False),
        (("*.example.com",), "https://evilexample.com", False),
        (("*.example.com",), "https://a.example.com.evil.org", False),
    ],
)
def test_the_allow_list(hosts: tuple[str, ...], url: str, allowed: bool) -> None:
    assert host_allowed(url, ServerPolicy(external_hosts=hosts)) is allowed


@pytest.mark.parametrize("entry", ["*", "*.", "a/b", "exa mple.com", "*.*.example.com", "EXAMPLE.com"])
def test_a_bad_allow_list_entry_is_refused_at_startup(entry: str) -> None:
    with pytest.raises(ValueError, match="host name"):
        ServerPolicy(external_hosts=(entry,))


def test_a_host_outside_the_allow_list_is_forbidden_and_its_secret_never_named() -> None:
    obj = k8s_realm(
        "team-a", "r", {"server": {"external": {"url": "https://evil.test", "adminSecret": {"name": "a"}}}}
    )
    target = realm_target(obj, {}, ServerPolicy(external_hosts=("sso.example.com",)))
    assert target.resource.problem is not None
    assert (target.resource.problem.phase, target.resource.problem.reason) == (
        "Forbidden",
        "ExternalServerNotAllowed",
    )
    assert target.server is None and target.credentials is None  # no round, no Secret read


def test_our_keycloaks_are_reached_by_a_fully_qualified_name_in_the_configured_domain() -> None:
    obj = k8s_realm("kc-ns", "r", {"server": {"keycloak": {"name": "kc"}}})
    url = server_url(obj, ServerPolicy(cluster_domain="corp.internal"))
    assert url == "http://kc-service.kc-ns.svc.corp.internal.:8080"
    assert names.is_keycloak_url(url, "corp.internal")
    assert not names.is_keycloak_url("http://kc-service.kc-ns.svc:8080", "corp.internal")
    assert not names.is_keycloak_url("https://sso.example.com", "corp.internal")


# --- whose login acts ---------------------------------------------------------------------------------------


def target(ns: str, cred: Credentials | None) -> RealmTarget:
    return RealmTarget(realm(ns, "r"), Server("https://sso"), cred, frozenset())


def test_a_realm_is_written_only_with_its_own_login_even_when_that_login_failed() -> None:
    a, b = Credentials("team-a", "adm"), Credentials("team-b", "adm")
    targets = {ObjectKey(REALM, "team-a", "r"): target("team-a", a)}
    assert acting_credentials(ObjectKey(REALM, "team-a", "r"), targets, [b]) == a  # never b, even if a failed


def test_an_orphan_is_deleted_with_the_servers_admin_or_its_own_namespace_never_another() -> None:
    server = Credentials("kc-ns", "kc-initial-admin", server_owned=True)
    a, b = Credentials("team-a", "adm"), Credentials("team-b", "adm")
    orphan = ObjectKey(REALM, "team-a", "gone")
    assert acting_credentials(orphan, {}, [b]) is None
    assert acting_credentials(orphan, {}, [b, a]) == a
    assert acting_credentials(orphan, {}, [b, a, server]) == server


# --- orphans ------------------------------------------------------------------------------------------------


def test_a_realm_declared_for_another_url_is_never_deleted_here() -> None:
    """A resource moved to another server URL, or naming this server by another spelling: its object here is
    not an orphan. Only a resource gone from every watched namespace makes one."""
    moved, gone = realm("team-a", "moved"), realm("team-a", "gone")
    observed = [stored(moved, "moved"), stored(gone, "gone")]
    scope = plan_realms(
        [], [], [{**o, "realm": o["realm"]} for o in observed], declared_elsewhere={moved.key}
    )
    assert [d.key for d in scope.plan.deletes] == [gone.key]


def test_objects_of_any_shape_from_a_server_are_skipped_not_fatal() -> None:
    r = realm("team-a", "r")
    twice = stored(realm("team-a", "twice"), "twice")
    junk: list[Any] = [42, "x", None, {"realm": 7}, {"id": "no-realm"}, {"realm": "r2", "attributes": "nope"}]
    scope = plan_realms([r], [], [*junk, {**twice, "realm": "twice"}, {**twice, "realm": "twice"}])
    assert [c.key for c in scope.plan.creates] == [r.key]
    assert [d.key for d in scope.plan.deletes] == [ObjectKey(REALM, "team-a", "twice")]  # listed twice: once


# --- revocation ---------------------------------------------------------------------------------------------


def revoked(r: Resource, since: datetime | None) -> Resource:
    return Resource(
        r.key, r.natural_key, r.content, r.created, problem=FORBIDDEN, parent=r.parent, forbidden_since=since
    )


@pytest.mark.parametrize(
    ("age", "stage"),
    [
        (None, "keep"),
        (timedelta(0), "keep"),
        (GRACE - timedelta(seconds=1), "keep"),
        (GRACE, "disable"),
        (2 * GRACE, "delete"),
    ],
)
def test_revocation_stages(age: timedelta | None, stage: str) -> None:
    now = T0 + 3 * GRACE
    since = None if age is None else now - age
    assert Revocation(now, GRACE).stage(since) == stage
    assert Revocation(now, timedelta(0)).stage(since) == "keep"  # grace 0: revocation off


def test_a_forbidden_client_is_kept_then_disabled_then_deleted() -> None:
    c = client("team-x", "web")
    observed = [stored(c, "u1")]
    now = T0 + timedelta(days=1)

    early = plan_clients([revoked(c, now - GRACE / 2)], observed, revocation=Revocation(now, GRACE))
    assert early.plan.is_empty() and not early.disables
    assert early.verdicts[c.key] == FORBIDDEN  # the schedule is added where the status is written
    assert "disabled at" in Revocation(now, GRACE).message(now - GRACE / 2, names.CLIENT_KIND)

    due = plan_clients([revoked(c, now - GRACE)], observed, revocation=Revocation(now, GRACE))
    assert due.plan.is_empty()
    assert due.disables == [Disable(c.key, "u1", observed[0])]

    already_off = plan_clients(
        [revoked(c, now - GRACE)], [{**observed[0], "enabled": False}], revocation=Revocation(now, GRACE)
    )
    assert not already_off.disables  # a steady state writes nothing

    late = plan_clients([revoked(c, now - 2 * GRACE)], observed, revocation=Revocation(now, GRACE))
    assert [d.key for d in late.plan.deletes] == [c.key]
    assert late.verdicts[c.key].phase == "Forbidden"


def test_a_client_allowed_again_is_simply_in_sync_again() -> None:
    c = client("team-x", "web")
    scope = plan_clients([c], [stored(c, "u1")], revocation=Revocation(T0 + 3 * GRACE, GRACE))
    assert scope.plan.is_empty() and not scope.disables and scope.verdicts[c.key].phase == "Ready"


def test_the_revocation_clock_starts_when_forbidden_and_survives_until_allowed() -> None:
    first = render({}, FORBIDDEN, generation=1, keycloak_id="u1", content_hash="", now="2026-01-01T00:00:00Z")
    assert first["forbiddenSince"] == "2026-01-01T00:00:00Z"
    later = render(
        first, FORBIDDEN, generation=2, keycloak_id="u1", content_hash="", now="2026-01-02T00:00:00Z"
    )
    assert later["forbiddenSince"] == "2026-01-01T00:00:00Z"
    allowed = render(
        later, Verdict("Ready", "InSync"), generation=2, keycloak_id="u1", content_hash="", now="x"
    )
    assert "forbiddenSince" not in allowed or allowed["forbiddenSince"] == ""


# --- blocked deletes ----------------------------------------------------------------------------------------


def test_only_allowed_clients_keep_a_realm_from_being_deleted() -> None:
    home = Resource(ObjectKey(REALM, "home", "r"), "r", {"realm": "r"}, T0, deleting=True)
    intruder = client("team-x", "web", problem=FORBIDDEN)
    assert blocked_realm_deletes([home], [intruder]) == {}
    member = client("home", "app")
    assert home.key in blocked_realm_deletes([home], [intruder, member])


def test_a_failed_revocation_stays_forbidden_so_the_clock_keeps_running() -> None:
    c = client("team-x", "web")
    now = T0 + timedelta(days=1)
    scope = plan_clients([revoked(c, now - GRACE)], [stored(c, "u1")], revocation=Revocation(now, GRACE))
    settled = settle(scope, {c.key: "PUT ...: 503"})
    assert settled.verdicts[c.key].phase == "Forbidden"
    assert "revoking failed: PUT ...: 503" in settled.verdicts[c.key].message
    assert c.key not in settled.finalizable


def test_an_external_url_in_the_form_of_our_own_keycloaks_is_forbidden() -> None:
    """Rounds of the Keycloaks the operator runs have workers of their own: a tenant's server must not get
    into that lane by spelling its URL like ours."""
    url = "http://evil-service.team-a.svc.cluster.local.:8080"
    obj = k8s_realm("team-a", "r", {"server": {"external": {"url": url, "adminSecret": {"name": "a"}}}})
    t = realm_target(obj, {})
    assert t.resource.problem is not None and t.resource.problem.reason == "ExternalServerNotAllowed"
    assert t.server is None and t.credentials is None


def test_a_client_the_model_now_refuses_stays_in_its_realm_and_is_never_an_orphan() -> None:
    """An operator upgrade that tightens the model must not delete the live clients it now refuses."""
    from keycloak_operator.core.replication.in_realm import client_resource

    home = k8s_realm(
        "home", "r", {"server": {"external": {"url": "https://sso", "adminSecret": {"name": "a"}}}}
    )
    targets = {ObjectKey(REALM, "home", "r"): realm_target(home, {})}
    obj = {
        "kind": CLIENT,
        "metadata": {"namespace": "home", "name": "web"},
        "spec": {"realm": {"name": "r"}, "clientId": "web app", "redirectUris": ["https://bücher.example/*"]},
    }
    c = client_resource(obj, targets)
    assert c.problem is not None and c.problem.reason == "InvalidSpec"
    assert c.parent == ObjectKey(REALM, "home", "r")
    live = Resource(c.key, "web app", {"clientId": "web app"}, T0)
    scope = plan_clients([c], [stored(live, "u1")])
    assert scope.plan.is_empty() and scope.verdicts[c.key].reason == "InvalidSpec"


def test_a_forbidden_kind_without_an_enabled_switch_is_told_only_of_its_deletion() -> None:
    now = T0 + timedelta(days=1)
    message = Revocation(now, GRACE).message(now - GRACE / 2, names.CLIENT_SCOPE_KIND)
    deleted = (now - GRACE / 2 + 2 * GRACE).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert "disabled" not in message
    assert f"deleted at {deleted}" in message


def test_a_forbidden_that_refuses_only_part_never_revokes_even_with_an_old_clock() -> None:
    """A role not granted is a Forbidden that is not a revocation: an old forbiddenSince left in the status
    by an earlier revocation must not disable or delete the object."""
    c = client("team-x", "web")
    observed = [stored(c, "u1")]
    now = T0 + timedelta(days=1)
    partial = Verdict("Forbidden", "ServiceAccountRoleNotGranted", "not granted", revocable=False)
    r = Resource(
        c.key,
        c.natural_key,
        c.content,
        c.created,
        problem=partial,
        parent=c.parent,
        forbidden_since=now - 3 * GRACE,
    )
    scope = plan_clients([r], observed, revocation=Revocation(now, GRACE))
    assert scope.plan.is_empty() and not scope.disables
    assert scope.verdicts[c.key] == partial


@pytest.mark.parametrize(
    "stamp", ["2026-01-01T00:00:00", "9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z", "nonsense"]
)
def test_any_forbidden_since_in_status_gives_a_usable_clock(stamp: str) -> None:
    from keycloak_operator.core.replication.objects import forbidden_since

    since = forbidden_since({"status": {"phase": "Forbidden", "forbiddenSince": stamp}})
    revocation = Revocation(datetime.now(UTC), GRACE)
    assert revocation.stage(since) in ("keep", "disable", "delete")
    revocation.message(since, names.CLIENT_KIND)  # no overflow, no naive/aware mix
