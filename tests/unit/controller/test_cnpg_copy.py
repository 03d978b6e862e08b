"""The cnpg tier's copy (core/cnpg_copy.py): its name, the recovered Cluster, how readiness is read, and the
copy machinery (database_copy) taking the Cluster as what "the database" is on that tier."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from keycloak_operator.core import cnpg_copy, reconcile, upgrade_plan
from keycloak_operator.core import database_copy as dc
from keycloak_operator.core.deployment import render_deployment
from keycloak_operator.kernel import names
from keycloak_operator.kernel import patterns as pt
from keycloak_operator.models.keycloak import KeycloakSpec
from keycloak_operator.models.upgrade_status import BlueGreenStatus, DatabaseStatus

NEW = "quay.io/keycloak/keycloak:26.7.3"
OLD = "quay.io/keycloak/keycloak:26.5.6"
STARTED = "2026-01-01T12:00:00Z"
OWNER = reconcile.owner_of({"metadata": {"name": "kc", "namespace": "ns", "uid": "u"}})


def spec(cluster: str = "kcdb", *, copy: dict[str, Any] | None = None, **db: Any) -> KeycloakSpec:
    return KeycloakSpec.model_validate(
        {
            "image": NEW,
            "database": {"cnpg": {"clusterName": cluster, **db}},
            "upgradePolicy": {"strategy": "BlueGreen", "databaseCopy": {} if copy is None else copy},
        }
    )


COPY = cnpg_copy.copy_name("kcdb", NEW, STARTED)


# --- the name -----------------------------------------------------------------------------------------------


def test_the_copy_is_named_for_the_cluster_the_release_and_the_upgrade() -> None:
    assert re.fullmatch(r"kcdb-26-7-3-[0-9a-f]{6}", COPY)
    assert cnpg_copy.copy_name("kcdb", NEW, STARTED) == COPY  # a resumed upgrade asks for the same one
    assert cnpg_copy.copy_name("kcdb", NEW, "2026-01-02T12:00:00Z") != COPY  # a later upgrade: another
    assert re.fullmatch(r"kcdb-[0-9a-f]{10}-[0-9a-f]{6}", cnpg_copy.copy_name("kcdb", "kc:latest", STARTED))


CLUSTERS = st.from_regex(r"[a-z]([-a-z0-9]{0,48}[a-z0-9])?", fullmatch=True)
IMAGES = st.one_of(
    st.tuples(st.integers(0, 10**12), st.integers(0, 10**6), st.integers(0, 10**6)).map(
        lambda v: f"quay.io/keycloak/keycloak:{v[0]}.{v[1]}.{v[2]}"
    ),
    st.text(min_size=1, max_size=40).map(lambda t: f"img:{t}"),
)


@given(cluster=CLUSTERS, image=IMAGES, started=st.text(max_size=30))
def test_every_copy_name_is_a_bounded_dns_label_recognised_as_the_clusters_copy(
    cluster: str, image: str, started: str
) -> None:
    name = cnpg_copy.copy_name(cluster, image, started)
    assert len(name) <= names.MAX_CNPG_CLUSTER
    assert re.fullmatch(pt.DNS1035_LABEL, name)
    assert len(names.cnpg_host(name)) <= 63 and len(names.cnpg_credentials_secret(name)) <= 63
    assert cnpg_copy.copy_name(cluster, image, started) == name
    assert names.is_cnpg_copy_cluster_of(name, cluster)
    assert not names.is_cnpg_copy_cluster_of(cluster, cluster)


def test_a_copy_of_a_shorter_name_is_not_taken_for_the_clusters() -> None:
    assert not names.is_cnpg_copy_cluster_of(cnpg_copy.copy_name("kc", NEW, STARTED), "kcdb")
    assert not names.is_cnpg_copy_cluster_of("kcdb-1-2-3", "kcdb")  # no upgrade digest: not ours


# --- the recovered Cluster ----------------------------------------------------------------------------------

SOURCE: dict[str, Any] = {
    "apiVersion": "postgresql.cnpg.io/v1",
    "kind": "Cluster",
    "metadata": {"name": "kcdb", "namespace": "ns", "uid": "src"},
    "spec": {
        "instances": 3,
        "imageName": "ghcr.io/cloudnative-pg/postgresql:17.2",
        "storage": {"size": "5Gi", "storageClass": "fast"},
        "walStorage": {"size": "1Gi"},
        "postgresql": {"parameters": {"max_connections": "300"}, "pg_hba": ["host all all 0/0 md5"]},
        "bootstrap": {"initdb": {"database": "keycloak", "owner": "kc_owner"}},
        "backup": {"barmanObjectStore": {"destinationPath": "s3://b/kcdb"}},
    },
    "status": {"image": "ghcr.io/cloudnative-pg/postgresql:17.1"},
}


def test_the_copy_is_recovered_from_the_backup_shaped_like_the_source() -> None:
    made = cnpg_copy.recovery_cluster(
        OWNER, spec(database="keycloak"), name=COPY, backup="kc-pre-1", source=SOURCE
    )
    assert (made["apiVersion"], made["kind"]) == ("postgresql.cnpg.io/v1", "Cluster")
    assert made["metadata"]["name"] == COPY and made["metadata"]["namespace"] == "ns"
    assert "ownerReferences" not in made["metadata"]  # data that may have served survives a delete
    assert made["metadata"]["annotations"][cnpg_copy.ANNOTATION_COPIED_FROM] == "kcdb"
    assert made["spec"]["bootstrap"] == {
        "recovery": {"backup": {"name": "kc-pre-1"}, "database": "keycloak", "owner": "kc_owner"}
    }
    assert made["spec"]["instances"] == 3
    assert made["spec"]["imageName"] == "ghcr.io/cloudnative-pg/postgresql:17.2"  # the spec's, not status'
    assert made["spec"]["storage"] == {"size": "5Gi", "storageClass": "fast"}
    assert made["spec"]["walStorage"] == {"size": "1Gi"}
    assert made["spec"]["postgresql"] == {"parameters": {"max_connections": "300"}}
    assert "backup" not in made["spec"]  # the source's object store path is the source's own


def test_an_unreadable_source_gives_cloudnativepgs_defaults_and_the_databases_own_name_as_owner() -> None:
    made = cnpg_copy.recovery_cluster(OWNER, spec(), name=COPY, backup="kc-pre-1", source=None)
    assert made["spec"]["instances"] == 1 and made["spec"]["storage"] == {"size": "1Gi"}
    assert made["spec"]["bootstrap"]["recovery"]["owner"] == "app"
    assert "imageName" not in made["spec"]


def test_the_image_falls_back_to_a_catalog_then_to_what_status_reports() -> None:
    catalog = {"apiGroup": "postgresql.cnpg.io", "kind": "ImageCatalog", "name": "pg", "major": 17}
    without = {**SOURCE, "spec": {k: v for k, v in SOURCE["spec"].items() if k != "imageName"}}
    made = cnpg_copy.recovery_cluster(OWNER, spec(), name=COPY, backup="b", source=without)
    assert made["spec"]["imageName"] == "ghcr.io/cloudnative-pg/postgresql:17.1"
    with_catalog = {**without, "spec": {**without["spec"], "imageCatalogRef": catalog}}
    made = cnpg_copy.recovery_cluster(OWNER, spec(), name=COPY, backup="b", source=with_catalog)
    assert made["spec"]["imageCatalogRef"] == catalog and "imageName" not in made["spec"]


@pytest.mark.parametrize(("name", "backup"), [(COPY, ""), ("kcdb", "kc-pre-1")])
def test_never_a_cluster_without_a_backup_or_onto_the_specs_own(name: str, backup: str) -> None:
    with pytest.raises(ValueError):
        cnpg_copy.recovery_cluster(OWNER, spec(), name=name, backup=backup, source=SOURCE)


# --- readiness, as CloudNativePG reports it -----------------------------------------------------------------


def cluster(phase: str = "", ready: str = "", instances: int = 2, ready_instances: int = 2) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase, "readyInstances": ready_instances}
    if ready:
        status["conditions"] = [{"type": "Ready", "status": ready}]
    return {"spec": {"instances": instances}, "status": status}


@pytest.mark.parametrize(
    ("obj", "phase"),
    [
        (None, None),
        ({"spec": {}}, "pending"),  # just created: CloudNativePG has not looked yet
        (cluster("Setting up primary", "False", ready_instances=0), "pending"),
        (cluster(cnpg_copy.HEALTHY_PHASE, "True"), "completed"),
        (cluster(cnpg_copy.HEALTHY_PHASE, "False"), "pending"),  # both words, never one
        (cluster("Setting up primary", "True"), "pending"),
        (cluster(cnpg_copy.HEALTHY_PHASE, "True", ready_instances=1), "pending"),  # a replica still joining
        (cluster("Cluster is unrecoverable and needs manual intervention"), "failed"),
        (cluster("Invalid cluster definition", "False"), "failed"),
    ],
)
def test_the_copy_is_ready_only_when_cloudnativepg_says_healthy_and_ready(
    obj: dict[str, Any] | None, phase: str | None
) -> None:
    assert cnpg_copy.phase(obj) == phase


# --- the copy machinery, with the Cluster as the database ---------------------------------------------------


def test_a_copy_on_cnpg_is_possible_and_needs_no_image() -> None:
    s = spec()
    assert dc.copy_possible(s) and dc.spec_database(s) == "kcdb"
    assert (
        upgrade_plan.for_spec(s.model_copy(update={"image": NEW}), OLD).path == upgrade_plan.BLUE_GREEN_COPY
    )


def test_the_copy_image_is_required_on_the_job_tiers_and_the_message_names_it() -> None:
    external = {"external": {"host": "pg", "credentialsSecret": {"name": "pg"}}}
    with pytest.raises(ValidationError, match=r"spec\.upgradePolicy\.databaseCopy\.image is required"):
        KeycloakSpec.model_validate(
            {"image": NEW, "database": external, "upgradePolicy": {"databaseCopy": {}}}
        )


def test_green_moves_to_the_copys_rw_service_and_app_secret() -> None:
    moved = dc.with_database(spec(database="keycloak"), COPY)
    assert moved.database.cnpg is not None
    assert (moved.database.cnpg.cluster_name, moved.database.cnpg.database) == (COPY, "keycloak")
    rendered = render_deployment(OWNER, spec(), image=NEW, track="b", version="v", database=COPY)
    (container,) = rendered["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e for e in container["env"]}
    assert env["KC_DB_URL_HOST"]["value"] == f"{COPY}-rw"
    assert env["KC_DB_USERNAME"]["valueFrom"]["secretKeyRef"]["name"] == f"{COPY}-app"
    assert dc.running_database(rendered, "cnpg") == COPY
    assert dc.running_database(rendered, "managed") == "app"


def test_a_name_that_is_no_copy_of_the_cluster_never_moves_the_pods() -> None:
    """An upgrade recorded before cnpg copies named the database (`app`) as blue's and green's."""
    s = spec()
    assert dc.with_database(s, "app") is s and dc.with_database(s, "other-26-7-3-abcdef") is s


def bg(state: str, **kw: Any) -> BlueGreenStatus:
    fields = {"blue_track": "a", "green_track": "b", "blue_database": "kcdb", "green_database": COPY}
    return BlueGreenStatus(state=state, **{**fields, "spec_database": "kcdb", **kw})


@pytest.mark.parametrize(
    ("recorded", "blue_green", "track", "running", "name"),
    [
        (None, None, "a", "kcdb", "kcdb"),  # never copied
        (None, bg("WaitingForGreen"), "a", "kcdb", "kcdb"),  # blue keeps the original during the upgrade
        (None, bg("Completed"), "a", "kcdb", "kcdb"),  # blue kept: the canonical is still blue
        (None, bg("Promoting"), "b", "", COPY),  # green becomes canonical with its Cluster
        (DatabaseStatus(name=COPY, copied_from="kcdb"), None, "b", COPY, COPY),
        (None, bg("Idle", blue_database=COPY), "a", COPY, COPY),  # status.database lost
        (None, None, "b", COPY, COPY),  # every status lost: the running canonical's copy holds
        (None, None, "a", "kcdb-old", "kcdb"),  # not a copy this operator named: the spec's
    ],
)
def test_the_canonical_cluster_never_moves_back_to_the_stale_original(
    recorded: DatabaseStatus | None, blue_green: BlueGreenStatus | None, track: str, running: str, name: str
) -> None:
    got = dc.canonical_database(spec(), recorded, blue_green, track, running)
    assert got.name == name
    assert got.copied_from == ("" if name == "kcdb" else "kcdb")


def test_after_promotion_the_copys_secret_is_the_one_required_and_the_original_may_go() -> None:
    """Found in review: the spec's `<cluster>-app` was still required after the pods moved to the copy, so
    deleting the original Cluster (as the guide suggests) left the Keycloak Degraded for good."""
    from tests.unit import builders

    s = spec()
    running = render_deployment(OWNER, s, image=NEW, track="b", version="v", database=COPY)
    status = {"database": {"name": COPY, "copiedFrom": "kcdb", "serving": COPY}}
    secrets = frozenset({f"{COPY}-app", "kc-initial-admin"})  # the original's kcdb-app is gone
    observed = builders.observed(s, deployment=running, status=status, existing_secrets=secrets, owner=OWNER)
    d = reconcile.decide(s, observed, now="2026-01-01T12:30:00Z")
    assert d.status is not None
    assert not [c for c in d.status["conditions"] if c["type"] == "Degraded" and c["status"] == "True"]
    # And the copy's own Secret is required: without it, Degraded names it.
    gone = builders.observed(
        s,
        deployment=running,
        status=status,
        existing_secrets=frozenset({"kcdb-app", "kc-initial-admin"}),
        owner=OWNER,
    )
    degraded = next(
        c
        for c in reconcile.decide(s, gone, now="2026-01-01T12:30:00Z").status["conditions"]  # type: ignore[index]
        if c["type"] == "Degraded"
    )
    assert degraded["reason"] == "SecretNotFound" and f"{COPY}-app" in degraded["message"]
