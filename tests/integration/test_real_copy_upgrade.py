"""A minor upgrade of real Keycloak pods on the real node (26.5.6 to 26.7.3: the new version migrates the
schema when it starts, and the old one cannot run on it) under BlueGreen with a database copy: green
migrates its own copy of blue's database while blue keeps serving from the untouched one, sign-ins never
fail, a rollback returns to blue on its database, and a second upgrade promotes green with its copy.

Sign-ins run throughout. Liquibase's `databasechangelog` is read in each database to prove the old version
never runs on a schema the new one migrated.

The PostgreSQL serves TLS only (its pg_hba.conf has no plain `host` line), and the Keycloak's database has
`tls: {sslMode: verify-full, sslRootCert: ...}`: both Keycloak versions (pgjdbc, through db-url-properties)
and the copy Job (libpq, through PGSSLMODE and PGSSLROOTCERT) reach it only by checking its certificate."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

import localcluster
from keycloak_operator.kernel import names
from localcluster import app_images, real_keycloak, realnode, signins
from localcluster.operator_process import OperatorProcess
from tests.integration.support import jgroups, real_resources
from tests.integration.support.kubectl import Kubectl, wait_for
from tests.integration.support.real_resources import KC

pytestmark = pytest.mark.integration

FROM_VERSION, TO_VERSION = "26.5.6", "26.7.3"
BLUE_DB = real_keycloak.DB_NAME
COPY_PREFIX = f"{BLUE_DB}_26_7_3_"  # then a digest of the upgrade's start: one database per upgrade
DATABASE_TLS = {
    "sslMode": "verify-full",
    "sslRootCert": {"name": real_keycloak.POSTGRES_CA_SECRET, "key": "ca.crt"},
}


@pytest.fixture(scope="module")
def images(cluster: localcluster.Cluster, real_node: realnode.RealNode) -> dict[str, str]:
    return {
        "from": app_images.keycloak(cluster, FROM_VERSION),
        "to": app_images.keycloak(cluster, TO_VERSION),
        "postgres": app_images.postgres(cluster),
    }


def sql(kubectl: Kubectl, namespace: str, database: str, query: str) -> str:
    (pod,) = kubectl.list("pods", namespace, selector="app=postgres")
    return kubectl.run(
        "exec", "-n", namespace, pod["metadata"]["name"], "--",
        "psql", "-U", real_keycloak.DB_USER, "-d", database, "-tAc", query,
    ).stdout.strip()  # fmt: skip


def schema(kubectl: Kubectl, namespace: str, database: str) -> tuple[int, str]:
    """(Liquibase changesets applied, the newest one's id): each migration adds some."""
    count = int(sql(kubectl, namespace, database, "select count(*) from databasechangelog"))
    newest = sql(
        kubectl, namespace, database, "select id from databasechangelog order by orderexecuted desc limit 1"
    )
    return count, newest


def keycloak(namespace: str, image: str, postgres: str, *, keep_blue: bool) -> dict[str, Any]:
    return real_keycloak.keycloak(
        "sso",
        namespace,
        image,
        replicas=1,
        database_tls=DATABASE_TLS,
        upgradePolicy={
            "strategy": "BlueGreen",
            "autoTeardown": not keep_blue,
            "databaseCopy": {"image": postgres},
        },
    )


def connections_over_tls(kubectl: Kubectl, namespace: str) -> tuple[int, int]:
    """(of them over TLS, Keycloak's user's connections over TCP) right now."""
    row = sql(
        kubectl, namespace, BLUE_DB,
        "select count(*) filter (where s.ssl), count(*) from pg_stat_activity a join pg_stat_ssl s "
        f"using (pid) where a.usename = '{real_keycloak.DB_USER}' and a.client_addr is not null",
    )  # fmt: skip
    over_tls, total = row.split("|")
    return int(over_tls), int(total)


def plain_tcp_refused(kubectl: Kubectl, namespace: str) -> str:
    """What the server answers a client that does not speak TLS (over TCP, from its own pod)."""
    (pod,) = kubectl.list("pods", namespace, selector="app=postgres")
    answer = kubectl.run(
        "exec", "-n", namespace, pod["metadata"]["name"], "--", "env",
        f"PGPASSWORD={real_keycloak.DB_PASSWORD}", "psql",
        f"host=127.0.0.1 sslmode=disable user={real_keycloak.DB_USER} dbname={BLUE_DB}", "-c", "select 1",
        check=False,
    )  # fmt: skip
    assert answer.returncode != 0, answer.stdout
    return answer.stderr


def database_of(deployment: dict[str, Any] | None) -> tuple[str, str]:
    """(image, KC_DB_URL_DATABASE) of a Deployment's Keycloak container."""
    assert deployment is not None
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    return container["image"], str(env["KC_DB_URL_DATABASE"])


def upgrade(kubectl: Kubectl, namespace: str, state: str) -> dict[str, Any] | None:
    status = (kubectl.get(KC, "sso", namespace) or {}).get("status") or {}
    return status if (status.get("blueGreen") or {}).get("state") == state else None


def test_a_minor_upgrade_on_a_database_copy_keeps_every_sign_in_and_can_go_back(
    kubectl: Kubectl,
    images: dict[str, str],
    session_operator_stopped: None,
    real_operator: OperatorProcess,
    namespace: str,
    tmp_path: Path,
) -> None:
    sso = real_resources.serve(
        kubectl,
        namespace,
        keycloak(namespace, images["from"], images["postgres"], keep_blue=True),
        images["postgres"],
        FROM_VERSION,
        postgres_tls=real_keycloak.postgres_tls(namespace, tmp_path),
    )
    # Nothing gets in without TLS, and Keycloak is in: over TLS, with the certificate checked (verify-full).
    assert "no encryption" in plain_tcp_refused(kubectl, namespace)
    blue = kubectl.get("deployment", names.deployment("sso"), namespace)
    assert blue is not None
    (server,) = blue["spec"]["template"]["spec"]["containers"]
    properties = {e["name"]: e.get("value") for e in server["env"]}["KC_DB_URL_PROPERTIES"]
    assert properties.startswith("?sslmode=verify-full&sslrootcert="), properties
    over_tls, total = connections_over_tls(kubectl, namespace)
    assert total > 0 and over_tls == total, (over_tls, total)
    blue_schema = schema(kubectl, namespace, BLUE_DB)
    load = signins.SignIns(sso.login, max_seconds=1800).start()
    try:
        wait_for("sign-ins before the change", lambda: load.count() >= 20, timeout=60)
        # 1. Upgrade, blue kept: green serves from its own migrated copy, and its JGroups view never holds
        # blue's pod (the pair reaching 26.7: test_real_cache_membership.py has the ones before it).
        with jgroups.ViewWatch(kubectl, namespace, "sso") as views:
            kubectl.apply(keycloak(namespace, images["to"], images["postgres"], keep_blue=True))
            together = real_resources.SideBySide(kubectl, namespace)
            status = wait_for(
                "traffic on green, blue kept",
                lambda: together.observe() and upgrade(kubectl, namespace, "Completed"),
                timeout=900,
                interval=2,
            )
            tracks = together.hold()
        jgroups.assert_apart(views.seen, tracks)
        plan, upgraded = status["upgradePlan"], status["blueGreen"]
        assert plan["path"] == "BlueGreenCopy", plan
        green_db = upgraded["greenDatabase"]  # the first upgrade's copy
        assert upgraded["blueDatabase"] == BLUE_DB and green_db.startswith(COPY_PREFIX), upgraded
        assert status["database"]["serving"] == green_db, status["database"]
        # The copy Job got through the TLS-only server with the same settings as the pods.
        copy_job = kubectl.get("job", upgraded["copyJob"], namespace)
        assert copy_job is not None, upgraded
        (copier,) = copy_job["spec"]["template"]["spec"]["containers"]
        copy_env = {e["name"]: e.get("value") for e in copier["env"]}
        assert copy_env["PGSSLMODE"] == "verify-full" and copy_env["PGSSLROOTCERT"], copy_env
        over_tls, total = connections_over_tls(kubectl, namespace)
        assert total > 0 and over_tls == total, (over_tls, total)
        assert upgraded["writeWindowSeconds"] > 0, upgraded
        blue = kubectl.get("deployment", names.deployment("sso"), namespace)
        green = kubectl.get("deployment", names.deployment("sso", green=True), namespace)
        assert database_of(blue) == (images["from"], BLUE_DB)
        assert database_of(green) == (images["to"], green_db)
        # The old version's database was never migrated; green's copy was, and holds blue's data.
        assert schema(kubectl, namespace, BLUE_DB) == blue_schema
        green_schema = schema(kubectl, namespace, green_db)
        assert green_schema[0] > blue_schema[0], (green_schema, blue_schema)
        assert sql(kubectl, namespace, green_db, "select count(*) from realm where name = 'team'") == "1"
        assert (
            sql(kubectl, namespace, green_db, "select count(*) from client where client_id = 'backend'")
            == "1"
        )
        assert (
            sql(kubectl, namespace, green_db, "select count(*) from user_entity where username = 'alice'")
            == "1"
        )
        windows = [e for e in kubectl.list("events", namespace) if e.get("reason") == "WriteWindow"]
        assert len(windows) == 1 and green_db in windows[0]["message"], windows
        window = upgraded["writeWindowSeconds"]
        on_green = time.monotonic()
        wait_for(
            "sign-ins on green", lambda: sum(a.at > on_green for a in list(load.attempts)) >= 20, timeout=90
        )

        # 2. Roll back: the kept blue serves again, from its untouched database.
        kubectl.apply(keycloak(namespace, images["from"], images["postgres"], keep_blue=True))
        status = wait_for(
            "rolled back to blue", lambda: upgrade(kubectl, namespace, "Idle"), timeout=300, interval=1
        )
        wait_for(
            "green removed",
            lambda: kubectl.get("deployment", names.deployment("sso", green=True), namespace) is None,
            timeout=120,
        )
        assert status["database"]["serving"] == BLUE_DB, status["database"]
        assert schema(kubectl, namespace, BLUE_DB) == blue_schema
        back = time.monotonic()
        wait_for(
            "sign-ins on blue again", lambda: sum(a.at > back for a in list(load.attempts)) >= 20, timeout=90
        )

        # 3. Upgrade again, blue torn down: a copy of its own (the first one, which served, is never touched),
        # and green is promoted to the canonical Deployment with its database, no pod restarted.
        kubectl.apply(keycloak(namespace, images["to"], images["postgres"], keep_blue=False))
        serving = wait_for(
            "green serving before promotion",
            lambda: upgrade(kubectl, namespace, "Draining") or upgrade(kubectl, namespace, "TearingDownBlue"),
            timeout=900,
            interval=1,
        )
        (green_pod,) = kubectl.list(
            "pods", namespace, selector=f"{names.LABEL_TRACK}={serving['blueGreen']['greenTrack']}"
        )
        status = wait_for(
            f"{TO_VERSION} promoted",
            lambda: real_resources.running(kubectl, namespace, TO_VERSION, replicas=1),
            timeout=300,
            interval=1,
        )
        assert status["blueGreen"]["state"] == "Completed"
        second = status["blueGreen"]["greenDatabase"]
        assert second.startswith(COPY_PREFIX) and second != green_db, second
        assert status["database"] == {"name": second, "copiedFrom": BLUE_DB, "serving": second}
        assert database_of(kubectl.get("deployment", names.deployment("sso"), namespace)) == (
            images["to"],
            second,
        )
        assert schema(kubectl, namespace, green_db) == green_schema  # the first copy is left as it was
        # Blue's pod may still be terminating (its grace period); the one that is not is green's, adopted by
        # the canonical Deployment and never restarted.
        server = f"{names.LABEL_INSTANCE}=sso,{names.LABEL_COMPONENT}={names.COMPONENT_SERVER}"
        live = [
            p
            for p in kubectl.list("pods", namespace, selector=server)
            if not p["metadata"].get("deletionTimestamp")
        ]
        assert [p["metadata"]["uid"] for p in live] == [green_pod["metadata"]["uid"]], live
        assert schema(kubectl, namespace, BLUE_DB) == blue_schema
        done = time.monotonic()
        wait_for(
            "sign-ins after promotion",
            lambda: sum(a.at > done for a in list(load.attempts)) >= 20,
            timeout=90,
        )
    finally:
        attempts = load.stop()
    failed = [a for a in attempts if not a.ok]
    assert not failed, f"{len(failed)} of {len(attempts)} sign-ins failed; first: {failed[:2]}"
    print(
        f"copy upgrade {FROM_VERSION} -> {TO_VERSION}, rollback, upgrade again: "
        f"{len(attempts)} sign-ins, 0 failed; first write window {window} s"
    )
