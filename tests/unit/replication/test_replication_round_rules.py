"""The round's pure rules, out of the shell: the order of a scope's writes, what a settled scope says on each
resource, what waits on a realm, the report written back on each resource, and when a server is retried."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from keycloak_operator.core.replication import Create, Delete, ObjectKey, Plan, Update
from keycloak_operator.core.replication.realm import with_login_problem
from keycloak_operator.core.replication.report import finalizer_added, report
from keycloak_operator.core.replication.resources import (
    Credentials,
    RealmTarget,
    Server,
    keep_orphans_of,
    names_keycloaks,
)
from keycloak_operator.core.replication.retry import MAX_OWN_RETRY_S, MAX_RETRY_S, RETRY_S, Backoff
from keycloak_operator.core.replication.round import (
    Round,
    collect,
    no_login,
    realm_failed,
    settled_realm,
    without_realm,
    without_server,
)
from keycloak_operator.core.replication.sync import (
    UNREADABLE,
    Disable,
    Release,
    Resource,
    ScopePlan,
    Verdict,
    operation,
)
from keycloak_operator.kernel import names
from keycloak_operator.kernel.events import Event
from keycloak_operator.kernel.names import HTTP_PORT

T0 = datetime(2026, 1, 1, tzinfo=UTC)
HASH = "0" * 64
REALM, CLIENT = names.REALM_KIND, names.CLIENT_KIND
MAIN = ObjectKey(REALM, "team", "main")
FINALIZER = names.REPLICATION_FINALIZER


def realm(name: str = "main", ns: str = "team", **flags: Any) -> Resource:
    return Resource(ObjectKey(REALM, ns, name), name, {"realm": name}, T0, **flags)


def client(name: str, parent: ObjectKey | None = MAIN, ns: str = "team", **flags: Any) -> Resource:
    return Resource(ObjectKey(CLIENT, ns, name), name, {"clientId": name}, T0, parent=parent, **flags)


def obj(key: ObjectKey, **meta: Any) -> dict[str, Any]:
    return {
        "kind": key.kind,
        "metadata": {"namespace": key.namespace, "name": key.name, "resourceVersion": "7", **meta},
    }


# --- the order of a scope's writes --------------------------------------------------------------------------

ops = st.lists(
    st.tuples(
        st.sampled_from(["delete", "duplicate", "release", "disable", "create", "update"]),
        st.sampled_from(["a", "b", "c"]),
        st.integers(0, 5),
    ),
    unique_by=lambda t: (t[0], t[1], t[2]),
)


@given(ops)
def test_every_removal_goes_before_any_upsert_and_namespaces_take_turns(
    entries: list[tuple[str, str, int]],
) -> None:
    scope = ScopePlan(Plan())
    for what, ns, n in entries:
        key = ObjectKey(CLIENT, ns, f"{what}-{n}")
        if what in ("delete", "duplicate"):
            (scope.plan.deletes if what == "delete" else scope.plan.duplicates).append(Delete(key, f"r{n}"))
        elif what == "release":
            scope.releases.append(Release(key, f"r{n}"))
        elif what == "disable":
            scope.disables.append(Disable(key, f"r{n}", {}))
        elif what == "create":
            scope.plan.creates.append(Create(key, {}, HASH))
        else:
            scope.plan.updates.append(Update(key, f"r{n}", {}, HASH, HASH))
    removals, upserts = scope.phases()
    assert {operation(op) for op in removals} <= {"delete", "release", "disable"}
    assert {operation(op) for op in upserts} <= {"create", "update"}
    everything = [*scope.plan.deletes, *scope.plan.duplicates, *scope.releases, *scope.disables]
    assert sorted(map(repr, removals)) == sorted(map(repr, everything))
    assert sorted(map(repr, upserts)) == sorted(map(repr, [*scope.plan.creates, *scope.plan.updates]))
    for phase in (removals, upserts):
        # Round-robin: a namespace's n-th write never comes after another namespace's (n+1)-th.
        seen: dict[str, int] = {}
        turns = []
        for op in phase:
            seen[op.key.namespace] = seen.get(op.key.namespace, 0) + 1
            turns.append(seen[op.key.namespace])
        assert turns == sorted(turns)


def test_the_metrics_name_each_operation_by_its_kind_of_write() -> None:
    key = ObjectKey(CLIENT, "team", "web")
    assert [
        operation(op)
        for op in (
            Delete(key, "r"),
            Create(key, {}, HASH),
            Update(key, "r", {}, HASH, HASH),
            Release(key, "r"),
            Disable(key, "r", {}),
        )
    ] == ["delete", "create", "update", "release", "disable"]


# --- what a settled scope says ------------------------------------------------------------------------------


def test_a_settled_scope_says_what_was_written_only_where_it_went_through() -> None:
    made, fixed, edited, gone, kept, off, broken = (
        client(n) for n in ("made", "fixed", "edited", "gone", "kept", "off", "broken")
    )
    scope = ScopePlan(
        Plan(
            deletes=[Delete(gone.key, "r-gone"), Delete(ObjectKey(CLIENT, "other", "stranger"), "r-x")],
            creates=[Create(made.key, {}, HASH), Create(broken.key, {}, HASH)],
            updates=[Update(fixed.key, "r1", {}, HASH, HASH), Update(edited.key, "r2", {}, HASH, "drifted")],
        ),
        releases=[Release(kept.key, "r-kept")],
        disables=[Disable(off.key, "r-off", {})],
        verdicts={
            made.key: Verdict("Ready", "InSync"),
            fixed.key: Verdict("Ready", "InSync"),
            edited.key: Verdict("Ready", "InSync"),
            off.key: Verdict("Forbidden", "NamespaceNotAllowed"),
            broken.key: Verdict("Error", "WriteFailed", "500"),
        },
        drift={edited.key: ["name", "redirectUris"]},
        remote_ids={made.key: "r-made", ObjectKey(CLIENT, "other", "stranger"): "r-x"},
        finalizable=[gone.key, kept.key],
    )
    rnd = Round()
    collect(rnd, scope, {r.key: r for r in (made, fixed, edited, gone, kept, off, broken)})
    assert rnd.events == {
        gone.key: [Event("Normal", "Deleted", "deleted from Keycloak (r-gone)")],
        kept.key: [Event("Normal", "Released", "left in Keycloak, no longer managed")],
        off.key: [
            Event(
                "Warning",
                "Revoked",
                "disabled in Keycloak: this namespace is no longer allowed (revocation grace passed)",
            )
        ],
        made.key: [Event("Normal", "Created", "created in Keycloak")],
        fixed.key: [Event("Normal", "Updated", "updated in Keycloak")],
        edited.key: [
            Event("Normal", "DriftRepaired", "restored fields edited in Keycloak: name, redirectUris")
        ],
    }
    assert rnd.remote_ids == {made.key: "r-made"}  # a marker naming a stranger is not taken as its id
    assert set(rnd.hashes) == {made.key, fixed.key, edited.key}
    assert rnd.finalizable == {gone.key, kept.key}
    assert rnd.verdicts[broken.key].phase == "Error"


def test_a_failed_write_is_said_on_its_resource_and_fails_the_round() -> None:
    rnd = Round()
    rnd.write_failed(MAIN, "boom")
    assert rnd.failed and rnd.events == {MAIN: [Event("Warning", "WriteFailed", "boom")]}


# --- what waits on a realm ----------------------------------------------------------------------------------


def test_with_no_login_every_realm_says_why_and_the_server_counts_as_reached_only_if_unused() -> None:
    rnd = Round()
    failed_login = realm("a", problem=Verdict("Error", "AdminLoginFailed", "401"))
    assert not no_login(rnd, [failed_login, realm("b")])
    assert rnd.failed
    assert rnd.verdicts[failed_login.key].reason == "AdminLoginFailed"
    assert rnd.verdicts[realm("b").key] == Verdict("Pending", "NoCredentials")
    empty = Round()
    assert no_login(empty, []) and not empty.failed


def test_a_login_failure_becomes_the_realms_problem_unless_it_has_one() -> None:
    plain = with_login_problem(realm(), 401, "login refused")
    assert plain.problem == Verdict("Error", "AdminLoginFailed", "login refused")
    going = with_login_problem(realm(deleting=True), 404, "Secret team/admin not found")
    assert going.problem is not None and FINALIZER in going.problem.message
    assert "keeps the finalizer" not in str(with_login_problem(realm(deleting=True), 401, "x").problem)
    own = Verdict("Forbidden", "NamespaceNotAllowed")
    assert with_login_problem(realm(problem=own), 401, "x").problem == own


def test_clients_of_a_missing_realm_report_their_problem_and_let_go_when_deleted() -> None:
    missing = ObjectKey(REALM, "team", "missing")
    lost = Verdict("Pending", "RealmNotFound", "not found")
    unread = ObjectKey(REALM, "hidden", "main")
    blind = Verdict("Error", UNREADABLE, "could not be read")
    rnd = Round()
    stays = client("stays", missing, problem=lost)
    goes = client("goes", missing, problem=lost, deleting=True)
    waits = client("waits", unread, problem=blind, deleting=True)
    fine = client("fine")
    without_realm(rnd, [stays, goes, waits, fine], {MAIN}, frozenset({"hidden"}))
    assert rnd.verdicts == {stays.key: lost, goes.key: lost, waits.key: blind}
    assert rnd.finalizable == {goes.key}


def test_realms_that_name_no_server_and_their_clients_are_reported_and_released() -> None:
    not_found = Verdict("Pending", "KeycloakNotFound", "Keycloak team/kc not found")
    going = realm("going", deleting=True, problem=not_found)
    hidden = realm("hidden", deleting=True, problem=Verdict("Error", UNREADABLE, "unreadable"))
    unresolved = {r.key: RealmTarget(r, None, None, frozenset()) for r in (going, hidden)}
    child = client("child", going.key, deleting=True)
    blind_child = client("blind", hidden.key, deleting=True)
    rnd = Round()
    without_server(rnd, unresolved, [child, blind_child, client("elsewhere")], frozenset())
    assert rnd.verdicts[going.key] == not_found
    assert rnd.verdicts[child.key] == Verdict(
        "Pending", "RealmNotReady", "realm team/going: Keycloak team/kc not found"
    )
    assert rnd.finalizable == {going.key, child.key}  # not what waits on an unreadable namespace
    assert ObjectKey(CLIENT, "team", "elsewhere") not in rnd.verdicts


def test_what_lives_in_a_realm_waits_until_the_realm_is_settled() -> None:
    children = [client("web"), client("old", deleting=True)]
    rnd = Round(verdicts={MAIN: Verdict("Ready", "InSync")}, remote_ids={MAIN: "main"})
    assert settled_realm(rnd, realm(), children) == "main"
    assert set(rnd.verdicts) == {MAIN}

    deleting = Round(verdicts={MAIN: Verdict("Deleting", "DeletionBlocked")}, remote_ids={MAIN: "main"})
    assert settled_realm(deleting, realm(), children) == "main"

    conflict = Round(verdicts={MAIN: Verdict("Conflict", "Conflict", "held by another")})
    assert settled_realm(conflict, realm(), children) is None
    assert conflict.verdicts[children[0].key] == Verdict(
        "Pending", "RealmNotReady", "realm team/main: held by another"
    )
    assert conflict.finalizable == {children[1].key}  # its realm is not in Keycloak: nothing to delete

    unreachable = Round(verdicts={MAIN: Verdict("Error", "ServerUnavailable", "503")})
    assert settled_realm(unreachable, realm(), children) is None
    assert unreachable.finalizable == set()  # not known to be gone

    unseen = Round()
    assert settled_realm(unseen, realm(), children) is None
    assert unseen.verdicts[children[0].key].message == "realm team/main: not in Keycloak"


def test_a_failed_step_inside_a_realm_fails_it_and_its_children_wait() -> None:
    rnd = Round()
    forbidden = Verdict("Forbidden", "NamespaceNotAllowed")
    realm_failed(
        rnd, realm(), [client("web"), client("intruder", problem=forbidden)], "internal error: KeyError"
    )
    assert rnd.failed
    assert rnd.verdicts[MAIN] == Verdict("Error", "RoundFailed", "internal error: KeyError")
    assert rnd.verdicts[client("web").key].reason == "RealmNotReady"
    assert rnd.verdicts[client("intruder").key] == forbidden


# --- which login deletes an orphan, and whether Keycloaks are listed ----------------------------------------


def test_each_orphan_is_deleted_by_one_login_only_never_a_borrowed_one() -> None:
    server_admin = Credentials("kc-ns", "kc-admin", server_owned=True)
    team_login = Credentials("team", "admin")
    mine = RealmTarget(realm(), Server("https://sso"), team_login, frozenset())
    targets = {MAIN: mine}
    orphans = [Delete(ObjectKey(REALM, "team", "old"), "old"), Delete(ObjectKey(REALM, "gone", "x"), "x")]

    def kept(cred: Credentials, logged_in: list[Credentials]) -> list[str]:
        scope = ScopePlan(Plan(deletes=[Delete(MAIN, "main"), *orphans]))
        keep_orphans_of(scope, cred, targets, logged_in)
        return [d.remote_id for d in scope.plan.deletes]

    assert kept(team_login, [team_login]) == ["main", "old"]  # not namespace gone's orphan
    assert kept(server_admin, [team_login, server_admin]) == ["main", "old", "x"]
    assert kept(team_login, [team_login, server_admin]) == ["main"]


def test_keycloaks_are_listed_only_when_a_realm_names_one() -> None:
    assert names_keycloaks([{"spec": {"server": {"keycloak": {"name": "kc"}}}}, {}])
    assert not names_keycloaks([{"spec": {"server": {"external": {"url": "https://sso"}}}}, {"spec": None}])


# --- what is written back on each resource ------------------------------------------------------------------


def test_the_finalizer_is_added_once_and_never_to_a_resource_being_deleted() -> None:
    fresh = obj(MAIN, finalizers=["other"])
    assert finalizer_added(fresh) == {
        "metadata": {"finalizers": ["other", FINALIZER], "resourceVersion": "7"}
    }
    assert finalizer_added(obj(MAIN, finalizers=[FINALIZER])) is None
    assert finalizer_added(obj(MAIN, deletionTimestamp="2026-01-01T00:00:00Z")) is None


def test_a_finalizable_resource_being_deleted_gets_its_events_then_loses_the_finalizer() -> None:
    going = obj(MAIN, deletionTimestamp="2026-01-01T00:00:00Z", finalizers=["other", FINALIZER])
    deleted = Event("Normal", "Deleted", "deleted from Keycloak (main)")
    rnd = Round(finalizable={MAIN}, verdicts={MAIN: Verdict("Ready", "InSync")}, events={MAIN: [deleted]})
    done = report(rnd, MAIN, going, T0, timedelta(0))
    assert done.events == [deleted]
    assert done.release == {"metadata": {"finalizers": ["other"], "resourceVersion": "7"}}
    assert done.ok is None and not done.status
    # Finalizable but not being deleted (a preserve released mid-round, say): its status as usual.
    assert report(rnd, MAIN, obj(MAIN), T0, timedelta(0)).release is None


def test_a_resource_another_round_decides_gets_nothing_but_its_events() -> None:
    done = report(Round(), MAIN, obj(MAIN), T0, timedelta(0))
    assert done == type(done)([])


def test_the_status_is_patched_only_when_it_changed() -> None:
    rnd = Round(verdicts={MAIN: Verdict("Ready", "InSync")}, remote_ids={MAIN: "main"}, hashes={MAIN: HASH})
    first = report(rnd, MAIN, obj(MAIN, generation=3), T0, timedelta(0))
    assert first.ok and first.status["phase"] == "Ready" and first.status["keycloakId"] == "main"
    assert first.transition is None
    stored = {**obj(MAIN, generation=3), "status": first.status}
    assert report(rnd, MAIN, stored, T0 + timedelta(hours=1), timedelta(0)).status == {}


def test_turning_conflict_or_forbidden_posts_a_warning_once() -> None:
    conflict = Verdict("Conflict", "Conflict", "'main' is already held by team/other")
    rnd = Round(verdicts={MAIN: conflict})
    done = report(rnd, MAIN, obj(MAIN), T0, timedelta(0))
    assert done.ok and done.conflict
    assert done.transition == Event("Warning", "Conflict", conflict.message)
    again = report(rnd, MAIN, {**obj(MAIN), "status": done.status}, T0, timedelta(0))
    assert again.transition is None and not again.conflict
    broken = report(
        Round(verdicts={MAIN: Verdict("Error", "WriteFailed", "500")}), MAIN, obj(MAIN), T0, timedelta(0)
    )
    assert broken.ok is False and broken.transition is None


def test_a_forbidden_status_shows_the_revocation_schedule_once_the_clock_runs() -> None:
    forbidden = Verdict("Forbidden", "NamespaceNotAllowed", "not allowed")
    rnd = Round(verdicts={MAIN: forbidden})
    grace = timedelta(hours=1)
    first = report(rnd, MAIN, obj(MAIN), T0, grace)
    assert first.status["forbiddenSince"] == "2026-01-01T00:00:00Z"
    assert first.transition == Event("Warning", "NamespaceNotAllowed", "not allowed")
    since_then = {**obj(MAIN), "status": first.status}
    later = report(rnd, MAIN, since_then, T0 + timedelta(minutes=5), grace)
    message = later.status["conditions"][0]["message"]
    assert message.startswith(
        "not allowed; its object in Keycloak, if any, is disabled at 2026-01-01T01:00:00Z"
    )
    assert "deleted at 2026-01-01T02:00:00Z" in message and later.transition is None
    off = report(rnd, MAIN, obj(MAIN), T0, timedelta(0))
    assert "forbiddenSince" not in off.status and off.status["conditions"][0]["message"] == "not allowed"


# --- when a server is retried -------------------------------------------------------------------------------

OWN = names.keycloak_url("kc", "team", HTTP_PORT)


@given(st.lists(st.booleans(), max_size=12), st.sampled_from(["https://sso.example.com", OWN]))
def test_an_unreachable_server_waits_twice_as_long_each_time_up_to_a_bound(
    reached: list[bool], server: str
) -> None:
    """Every server backs off, the Keycloaks this operator runs included (a tenant may create one whose
    image answers as it likes); those stop growing at MAX_OWN_RETRY_S."""
    backoff = Backoff()
    ceiling = MAX_OWN_RETRY_S if server == OWN else MAX_RETRY_S
    now, streak = 0.0, 0
    for ok in reached:
        assert not backoff.waiting(server + "/auth", now)
        delay = backoff.after(server + "/x", failed=not ok, reached=ok, now=now)
        streak = 0 if ok else streak + 1
        if ok:
            assert delay is None
        else:
            assert delay == min(RETRY_S * 2 ** (streak - 1), ceiling)
            assert backoff.waiting(server, now + delay - 1.5)  # any path on that host
            assert not backoff.waiting("https://other.example.com", now)
            assert not backoff.waiting(server, now + delay)  # the retry itself runs
        now += delay or 0.0


def test_an_operator_run_keycloak_backs_off_but_never_longer_than_one_resync() -> None:
    backoff = Backoff()
    delays = [backoff.after(OWN, failed=True, reached=False, now=100.0 * i) for i in range(8)]
    assert delays == [10.0, 20.0, 40.0, 60.0, 60.0, 60.0, 60.0, 60.0]
    assert MAX_OWN_RETRY_S <= 60.0  # KCOP_RESYNC_SECONDS' default: an upgrade's restart costs one resync
    assert backoff.after(OWN, failed=False, reached=True, now=900.0) is None
    assert not backoff.waiting(OWN, 900.0)  # reached again: no delay left over
    assert backoff.after(OWN, failed=True, reached=False, now=900.0) == RETRY_S  # the streak starts over
    assert backoff.after("https://sso", failed=True, reached=True, now=0.0) == RETRY_S
    other_domain = Backoff("corp.internal")
    assert other_domain.after(OWN, failed=True, reached=False, now=0.0) == RETRY_S  # an external name there
    delays = [other_domain.after(OWN, failed=True, reached=False, now=1000.0 * i) for i in range(1, 7)]
    assert delays[-1] == MAX_RETRY_S
