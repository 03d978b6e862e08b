"""Blue-green on a database copy: which database each colour uses, the copy's name, and its Job."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from keycloak_operator.core import database_copy as dc
from keycloak_operator.core import reconcile, upgrade_plan
from keycloak_operator.core.deployment import render_deployment
from keycloak_operator.models.keycloak import KeycloakSpec
from keycloak_operator.models.upgrade_status import BlueGreenStatus, DatabaseStatus
from tests.unit.builders import OWNER

OLD = "quay.io/keycloak/keycloak:26.5.6"
NEW = "quay.io/keycloak/keycloak:26.7.3"
COPY = {"image": "docker.io/library/postgres:17"}
EXTERNAL = {"external": {"host": "pg.db.svc", "database": "keycloak", "credentialsSecret": {"name": "pg"}}}


def spec(database: dict[str, Any] | None = None, **policy: Any) -> KeycloakSpec:
    return KeycloakSpec.model_validate(
        {"image": NEW, "database": database or EXTERNAL, "upgradePolicy": {"strategy": "BlueGreen", **policy}}
    )


# --- when a copy is offered ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("database", "asked", "possible"),
    [
        (EXTERNAL, True, True),
        ({"managed": {"host": "pg", "credentialsSecret": {"name": "pg"}}}, True, True),
        ({"cnpg": {"clusterName": "db"}}, True, True),  # a Cluster recovered from the backup (cnpg_copy)
        (EXTERNAL, False, False),  # never unasked: the copy needs CREATEDB and an image the user chooses
    ],
)
def test_a_copy_is_possible_only_where_asked_and_made(
    database: dict[str, Any], asked: bool, possible: bool
) -> None:
    s = spec(database, **({"databaseCopy": COPY} if asked else {}))
    assert dc.copy_possible(s) is possible
    plan = upgrade_plan.for_spec(s, OLD)
    assert plan.path == (upgrade_plan.BLUE_GREEN_COPY if possible else upgrade_plan.REFUSE)


def test_a_patch_upgrade_shares_the_database_even_when_a_copy_is_possible() -> None:
    s = spec(databaseCopy=COPY).model_copy(update={"image": "quay.io/keycloak/keycloak:26.7.4"})
    assert upgrade_plan.for_spec(s, NEW).path == upgrade_plan.BLUE_GREEN_SHARED


def test_a_downgrade_is_refused_even_with_a_copy() -> None:
    s = spec(databaseCopy=COPY).model_copy(update={"image": OLD})
    assert upgrade_plan.for_spec(s, NEW).path == upgrade_plan.REFUSE


@pytest.mark.parametrize("image", ["", "postgres 17", "x" * 1025])
def test_the_copy_image_is_checked(image: str) -> None:
    with pytest.raises(ValidationError):
        spec(databaseCopy={"image": image})


# --- names --------------------------------------------------------------------------------------------------


T1, T2 = "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"


def test_the_copy_is_named_after_the_spec_database_green_release_and_the_upgrade() -> None:
    name = dc.copy_name("keycloak", NEW, T1)
    assert name.startswith("keycloak_26_7_3_") and len(name) == len("keycloak_26_7_3_") + 6
    assert name == dc.copy_name("keycloak", NEW, T1)  # a resumed upgrade asks for the same database
    # A later upgrade to the same release never lands on the database an earlier one made (it may have
    # served since, and hold the only copy of what was written there).
    assert dc.copy_name("keycloak", NEW, T2) != name


def test_an_image_without_a_release_gets_a_digest_suffix() -> None:
    name = dc.copy_name("keycloak", "quay.io/keycloak/keycloak:nightly", T1)
    assert name.startswith("keycloak_") and len(name) == len("keycloak_") + 10 + 1 + 6


@given(
    st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,62}", fullmatch=True),
    st.sampled_from([OLD, NEW, "kc:dev"]),
    st.sampled_from([T1, T2]),
)
def test_a_copy_name_is_always_a_quotable_database_name_never_its_source_and_known_as_a_copy(
    base: str, image: str, started: str
) -> None:
    name = dc.copy_name(base, image, started)
    assert len(name) <= dc.MAX_DATABASE and name != base
    assert dc.is_copy_of(name, base) and not dc.is_copy_of(base, base)
    dc.job(OWNER, spec(databaseCopy=COPY), name="j", source=base, target=name)  # quotable


@pytest.mark.parametrize(
    ("name", "base", "copy"),
    [
        ("keycloak_26_7_3_abcdef", "keycloak", True),
        ("keycloak_0123456789_abcdef", "keycloak", True),
        ("keycloak_old", "keycloak", False),  # a database the user named
        ("keycloak_26_7_3_abcdef", "other", False),
        ("_26_7_3_abcdef", "keycloak", False),
    ],
)
def test_is_copy_of(name: str, base: str, copy: bool) -> None:
    assert dc.is_copy_of(name, base) is copy


def test_job_names_are_per_upgrade_and_stable() -> None:
    a = dc.job_name("kc", "keycloak_26_7_3", "2026-01-01T00:00:00Z")
    assert a == dc.job_name("kc", "keycloak_26_7_3", "2026-01-01T00:00:00Z")
    assert a != dc.job_name("kc", "keycloak_26_7_3", "2026-01-01T00:00:01Z")
    assert a.startswith("kc-dbcopy-")


# --- the Job ------------------------------------------------------------------------------------------------


def test_the_job_copies_with_the_database_credentials_and_no_splicing() -> None:
    job = dc.job(
        OWNER, spec(databaseCopy=COPY), name="kc-dbcopy-1", source="keycloak", target="keycloak_26_7_3"
    )
    pod = job["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    env = {e["name"]: e for e in container["env"]}
    assert container["image"] == COPY["image"]
    assert env["PGHOST"]["value"] == "pg.db.svc" and env["PGPORT"]["value"] == "5432"
    assert env["PGPASSWORD"]["valueFrom"]["secretKeyRef"] == {"name": "pg", "key": "password"}
    assert (env["KCOP_SOURCE"]["value"], env["KCOP_TARGET"]["value"]) == ("keycloak", "keycloak_26_7_3")
    # The marker names this very Job: only its own earlier try is ever dropped, never another upgrade's copy.
    assert OWNER.uid in env["KCOP_MARKER"]["value"] and "kc-dbcopy-1" in env["KCOP_MARKER"]["value"]
    assert job["spec"]["activeDeadlineSeconds"] == 600  # databaseCopy.timeout's default, 10m
    # The names reach the script only through the environment.
    assert container["command"] == ["sh", "-c", dc.SCRIPT] and "keycloak_26_7_3" not in dc.SCRIPT
    assert job["spec"]["backoffLimit"] == 0 and pod["restartPolicy"] == "Never"
    assert job["metadata"]["ownerReferences"] == [OWNER.reference()]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True


def test_the_script_drops_only_a_target_this_keycloak_made() -> None:
    assert 'if [ "$found" != "exists:$KCOP_MARKER" ]' in dc.SCRIPT
    assert dc.SCRIPT.index("exit 1") < dc.SCRIPT.index("DROP DATABASE")
    assert "--exit-on-error" in dc.SCRIPT and dc.SCRIPT.startswith("set -eu")
    # The kubelet turns `$$` into `$` in a command (its escape for `$(VAR)` expansion): none may be there.
    assert "$$" not in dc.SCRIPT
    # The copied jdbc-ping discovery rows are blue's pods: deleted, after the restore (ADR 0021).
    assert dc.SCRIPT.index("pg_restore") < dc.SCRIPT.index("lower(tablename) = 'jgroups_ping'")


def test_the_job_follows_the_pods_onto_their_nodes() -> None:
    s = spec(databaseCopy=COPY, scheduling={}).model_copy()
    s = KeycloakSpec.model_validate(
        {
            **s.wire(),
            "scheduling": {
                "nodeSelector": {"pool": "db"},
                "tolerations": [{"key": "k", "operator": "Exists"}],
            },
        }
    )
    pod = dc.job(OWNER, s, name="j", source="a", target="b")["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"pool": "db"}
    assert pod["tolerations"] == [{"key": "k", "operator": "Exists"}]


@pytest.mark.parametrize(
    ("source", "target"), [("keycloak", "keycloak"), ("a'b", "c"), ("a", 'b"c'), ("a", "")]
)
def test_the_job_refuses_names_it_cannot_quote_or_a_copy_onto_itself(source: str, target: str) -> None:
    with pytest.raises(ValueError):
        dc.job(OWNER, spec(databaseCopy=COPY), name="j", source=source, target=target)


def test_no_job_without_the_setting() -> None:
    with pytest.raises(ValueError):
        dc.job(OWNER, spec(), name="j", source="a", target="b")


@pytest.mark.parametrize(
    ("conditions", "phase"),
    [
        ([], "pending"),
        ([{"type": "Complete", "status": "True"}], "completed"),
        ([{"type": "Failed", "status": "True"}], "failed"),
        ([{"type": "Failed", "status": "False"}], "pending"),
        (
            [{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}],
            "completed",
        ),
    ],
)
def test_job_phase(conditions: list[dict[str, str]], phase: str) -> None:
    assert dc.job_phase({"status": {"conditions": conditions}}) == phase
    assert dc.job_phase(None) is None
    assert dc.job_phase({}) == "pending"


# --- which database each Deployment uses ---------------------------------------------------------------


def test_with_database_moves_only_the_name() -> None:
    s = spec()
    moved = dc.with_database(s, "keycloak_26_7_3")
    assert moved.database.external is not None and s.database.external is not None
    assert moved.database.external.database == "keycloak_26_7_3"
    assert moved.database.external.host == s.database.external.host
    assert dc.with_database(s, "") is s and dc.with_database(s, "keycloak") is s


COPY_DB = "keycloak_26_7_3_abcdef"
OTHER_COPY = "other_26_7_3_abcdef"  # a copy made while the spec named the database `other`


def bg(state: str, green: str = COPY_DB, **kw: Any) -> BlueGreenStatus:
    fields = {"blue_track": "a", "green_track": "b", "blue_database": "keycloak", "green_database": green}
    return BlueGreenStatus(state=state, **{**fields, **kw})


@pytest.mark.parametrize(
    ("recorded", "blue_green", "track", "running", "name"),
    [
        (None, None, "a", "", "keycloak"),  # never copied
        (None, bg("WaitingForGreen"), "a", "keycloak", "keycloak"),  # blue keeps its own during the upgrade
        (None, bg("Completed"), "a", "keycloak", "keycloak"),  # blue kept: the canonical is still blue
        (None, bg("Promoting"), "b", "", COPY_DB),  # green becomes canonical with its copy
        (None, bg("Completed"), "b", COPY_DB, COPY_DB),
        (DatabaseStatus(name=COPY_DB, copied_from="keycloak"), None, "b", COPY_DB, COPY_DB),
        # The user renamed the spec's database: every record stood in for another name, the spec wins.
        (DatabaseStatus(name=OTHER_COPY, copied_from="other"), None, "b", OTHER_COPY, "keycloak"),
        (None, bg("Completed", green=OTHER_COPY, spec_database="other"), "b", OTHER_COPY, "keycloak"),
        (None, bg("Completed", green="keycloak"), "b", "keycloak", "keycloak"),  # a shared upgrade
        (None, bg("Failed"), "a", "keycloak", "keycloak"),  # a failed copy never moves the canonical
        # status.database lost after a promoted copy, a later upgrade cancelled: blue's record holds.
        (None, bg("Idle", blue_database=COPY_DB), "a", COPY_DB, COPY_DB),
        # Every status lost (a restore without status): the running canonical's copy holds.
        (None, None, "b", COPY_DB, COPY_DB),
        (None, None, "a", "keycloak_old", "keycloak"),  # not a copy this operator named: the spec's
    ],
)
def test_canonical_database(
    recorded: DatabaseStatus | None, blue_green: BlueGreenStatus | None, track: str, running: str, name: str
) -> None:
    got = dc.canonical_database(spec(), recorded, blue_green, track, running)
    assert got.name == name
    assert got.copied_from == ("" if name == "keycloak" else "keycloak")


FORGED = [
    "keycloak?sslmode=disable&x=",
    "host=evil.example sslmode=disable dbname=k",
    'k"; drop',
    "k" * 64,
    "",
]


@pytest.mark.parametrize("forged", FORGED)
def test_a_database_name_in_status_is_believed_only_in_the_shape_the_operator_writes(forged: str) -> None:
    # Whoever may write the status must not put URL parameters into the pods' JDBC URL: the next evidence
    # holds (here the running canonical's copy, else the spec's).
    for recorded, blue_green, track in [
        (DatabaseStatus(name=forged, copied_from="keycloak"), None, "b"),
        (None, bg("Completed", green=forged), "b"),
        (None, bg("Idle", blue_database=forged), "a"),
    ]:
        assert dc.canonical_database(spec(), recorded, blue_green, track, COPY_DB).name == COPY_DB
        assert dc.canonical_database(spec(), recorded, blue_green, track, "").name == "keycloak"


def test_running_database_reads_the_keycloak_container() -> None:
    owner = reconcile.owner_of({"metadata": {"name": "kc", "namespace": "ns", "uid": "u"}})
    rendered = render_deployment(owner, spec(), image=NEW, track="a", version="v", database=COPY_DB)
    assert dc.running_database(rendered) == COPY_DB
    assert dc.running_database(None) == ""


def test_the_reconcile_renders_the_canonical_on_its_recorded_copy() -> None:
    s = spec()
    owner = reconcile.owner_of({"metadata": {"name": "kc", "namespace": "ns", "uid": "u"}})
    rendered = render_deployment(owner, s, image=NEW, track="b", version="v", database="keycloak_26_7_3")
    (container,) = rendered["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["KC_DB_URL_DATABASE"] == "keycloak_26_7_3"


# --- a recreate says there is no way back ------------------------------------------------------------------

MANAGED = {"managed": {"host": "pg", "credentialsSecret": {"name": "pg"}}}
CNPG = {"cnpg": {"clusterName": "db"}}


@pytest.mark.parametrize(
    ("database", "policy"),
    [
        (EXTERNAL, {"strategy": "Recreate"}),
        (EXTERNAL, {"allowDowntime": True}),  # BlueGreen with no copy: it recreates
        (MANAGED, {"strategy": "Recreate"}),
        (CNPG, {"strategy": "Recreate"}),
    ],
)
def test_a_recreate_across_a_migration_says_before_it_starts_that_there_is_no_way_back(
    database: dict[str, Any], policy: dict[str, Any]
) -> None:
    plan = upgrade_plan.for_spec(spec(database, **policy), OLD)
    assert plan.path == upgrade_plan.RECREATE
    assert "no way back" in plan.reason and "the old one cannot use it" in plan.reason
    external = "cannot back up an external database: take a backup of your own" in plan.reason
    assert external is (database is EXTERNAL)
    assert ("a recreate takes none" in plan.reason) is (database is not EXTERNAL)


@pytest.mark.parametrize(
    ("image", "policy", "path"),
    [
        ("quay.io/keycloak/keycloak:26.7.4", {"strategy": "Recreate"}, upgrade_plan.ROLL),  # no migration
        (NEW, {"strategy": "Recreate"}, upgrade_plan.NONE),
        (OLD, {"strategy": "Recreate"}, upgrade_plan.REFUSE),  # a downgrade says why on its own
        (OLD.replace("26.5.6", "26.7.4"), {"databaseCopy": COPY}, upgrade_plan.BLUE_GREEN_SHARED),
    ],
)
def test_only_a_recreate_says_it(image: str, policy: dict[str, Any], path: str) -> None:
    s = spec(EXTERNAL, **policy).model_copy(update={"image": image})
    plan = upgrade_plan.for_spec(s, NEW)
    assert plan.path == path and "no way back" not in plan.reason
