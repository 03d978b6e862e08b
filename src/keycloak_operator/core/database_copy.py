"""Blue-green on a copy of the database: which database each colour uses, and the Job that makes the copy
(the cnpg tier's copy is a recovered Cluster instead: core/cnpg_copy.py, and there "database" below means
the Cluster).

A minor or major Keycloak release migrates the schema when it starts, after which the old release cannot use
the database. So green gets its own database on the same server, filled from blue's when the upgrade starts
(`pg_dump` then `pg_restore`, in a Job), and migrates that one; blue keeps serving from its untouched
database until the cutover, and stays the way back while it is kept. The spec keeps the database name the
user wrote (no GitOps drift); status.database says which database the pods use.

Pure: the shell creates the Job and reads it back; nothing here knows a client.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Final, Literal

from keycloak_operator.core import cnpg_copy, database_tls, durations, jobs, rollout
from keycloak_operator.core.children import Owner
from keycloak_operator.core.images import release_of
from keycloak_operator.core.keycloak_config import database_coordinates
from keycloak_operator.kernel import names
from keycloak_operator.kernel import patterns as pt
from keycloak_operator.models.keycloak import KeycloakSpec
from keycloak_operator.models.upgrade_status import BlueGreenStatus, DatabaseStatus

CopyPhase = Literal["pending", "completed", "failed"]

COMPONENT: Final = "database-copy"
MAX_DATABASE: Final = 63  # PostgreSQL's identifier length
_WORK: Final = "/work"
# Who made a database, written on it as a comment: the Job drops an existing target only when it carries
# this very Job's marker (its own earlier try), never a database another upgrade or anyone else made.
_MARKER_PREFIX: Final = "keycloak-operator copy"

# The copy's jdbc-ping discovery rows (table jgroups_ping) are blue's pods: under the same cluster name (both
# `ISPN` before 26.7, or one autoRevision name) green would find blue through them and join its cluster, so
# they are deleted; green's pods write their own when they start (ADR 0021).
# Kubernetes reads `$$` in a container's command as an escaped `$`, so the script has none (a tagged dollar
# quote instead).
# Inputs arrive as environment variables, never spliced into the script. Database names match the CRD's
# pattern (letters, digits, `_`, `-`: no quote can end an SQL identifier or literal), checked again in
# `job` before rendering.
SCRIPT: Final = """set -eu
found=$(psql -v ON_ERROR_STOP=1 -d "$KCOP_SOURCE" -Atc "SELECT 'exists:' ||
  coalesce(shobj_description(oid, 'pg_database'), '') FROM pg_database WHERE datname = '$KCOP_TARGET'")
if [ -n "$found" ]; then
  if [ "$found" != "exists:$KCOP_MARKER" ]; then
    echo "database $KCOP_TARGET exists and was not made by this Keycloak's copy; not touching it" >&2
    exit 1
  fi
  echo "dropping $KCOP_TARGET, left by an earlier copy"
  psql -v ON_ERROR_STOP=1 -d "$KCOP_SOURCE" -c "DROP DATABASE \\"$KCOP_TARGET\\""
fi
psql -v ON_ERROR_STOP=1 -d "$KCOP_SOURCE" -c "CREATE DATABASE \\"$KCOP_TARGET\\"" \\
  -c "COMMENT ON DATABASE \\"$KCOP_TARGET\\" IS '$KCOP_MARKER'"
pg_dump --format=custom --no-owner --no-acl --file=/work/dump "$KCOP_SOURCE"
pg_restore --no-owner --no-acl --exit-on-error --single-transaction --dbname="$KCOP_TARGET" /work/dump
psql -v ON_ERROR_STOP=1 -d "$KCOP_TARGET" <<'SQL'
DO $kcop$
DECLARE t text;
BEGIN
  FOR t IN SELECT quote_ident(schemaname) || '.' || quote_ident(tablename) FROM pg_tables
           WHERE lower(tablename) = 'jgroups_ping' LOOP
    EXECUTE 'DELETE FROM ' || t;
  END LOOP;
END $kcop$;
SQL
echo "copied $KCOP_SOURCE to $KCOP_TARGET"
"""


def copy_possible(spec: KeycloakSpec) -> bool:
    """The user asked for copies (every tier can make one: a Job, or on cnpg a recovered Cluster), and
    nothing rules one out (`why_no_copy`)."""
    return spec.upgrade_policy.database_copy is not None and not why_no_copy(spec)


def why_no_copy(spec: KeycloakSpec) -> str:
    """Why a copy asked for cannot keep green apart, or "". A copy carries blue's jdbc-ping discovery rows
    (jgroups_ping): the Job deletes them (SCRIPT); a cnpg recovery runs no SQL of ours, so green would find
    blue through them under the same cluster name (ADR 0021)."""
    if spec.database.cnpg is not None and spec.cache_isolation.stack_in_use == "jdbc-ping":
        return (
            "on the cnpg tier the copy is a recovery of blue's backup, which carries blue's jdbc-ping "
            "discovery rows, and green would find blue through them (the kubernetes stack avoids it)"
        )
    return ""


def spec_database(spec: KeycloakSpec) -> str:
    """What a copy stands in for: the spec's database name; on the cnpg tier the spec's Cluster, since
    there the copy is a whole Cluster (core/cnpg_copy.py) whose database keeps the spec's name."""
    cnpg = spec.database.cnpg
    return cnpg.cluster_name if cnpg is not None else database_coordinates(spec)[2]


def with_database(spec: KeycloakSpec, database: str) -> KeycloakSpec:
    """`spec` with its tier's database name replaced: the pods of one colour on that colour's database.
    On cnpg, the Cluster replaced, and only by a copy of the spec's: a name recorded before cnpg copies
    existed (the database's, `app`) never moves the pods to a Cluster of that name."""
    if not database or database == spec_database(spec):
        return spec
    db = spec.database
    if db.cnpg is not None:
        if not names.is_cnpg_copy_cluster_of(database, db.cnpg.cluster_name):
            return spec
        moved = db.model_copy(update={"cnpg": db.cnpg.model_copy(update={"cluster_name": database})})
        return spec.model_copy(update={"database": moved})
    tier = db.cnpg or db.managed or db.external
    if tier is None:
        raise ValueError("no database tier set")
    field = "cnpg" if db.cnpg is not None else "managed" if db.managed is not None else "external"
    moved = db.model_copy(update={field: tier.model_copy(update={"database": database})})
    return spec.model_copy(update={"database": moved})


def green_copy_name(tier: str, base: str, green_image: str, started: str) -> str:
    """Green's copy of `base` for the tier: a recovered Cluster on cnpg, a database on the others."""
    if tier == "cnpg":
        return cnpg_copy.copy_name(base, green_image, started)
    return copy_name(base, green_image, started)


def copy_name(base: str, green_image: str, started: str) -> str:
    """Green's database: the spec's name, green's release and a digest of the upgrade's start
    (`keycloak_26_7_3_5f2a9c`), or a digest of the image when its tag names no release. One per upgrade: a
    later upgrade to the same release never lands on a database an earlier one made (it may have served
    since, holding the only copy of what was written there); a resumed one asks for the same name."""
    release = release_of(green_image)
    if release is not None and not release.prerelease:
        suffix = f"_{release.major}_{release.minor}_{release.patch}"
    else:
        suffix = "_" + hashlib.sha256(green_image.encode()).hexdigest()[:10]
    suffix += "_" + hashlib.sha256(started.encode()).hexdigest()[:6]
    return base[: MAX_DATABASE - len(suffix)] + suffix


def job_name(keycloak: str, target: str, started: str) -> str:
    digest = hashlib.sha256(f"{target}\0{started}".encode()).hexdigest()[:8]
    return f"{keycloak}-dbcopy-{digest}"


def marker(owner: Owner, job: str) -> str:
    """Names the Job, not only the Keycloak: a target is dropped only by a re-run of the Job that made it,
    never by another upgrade."""
    return f"{_MARKER_PREFIX} {job} for {owner.namespace}/{owner.name} ({owner.uid})"


def _checked(database: str) -> str:
    if not re.fullmatch(pt.DATABASE, database) or len(database) > MAX_DATABASE:
        raise ValueError(f"not a database name the copy can quote safely: {database!r}")
    return database


def job(owner: Owner, spec: KeycloakSpec, *, name: str, source: str, target: str) -> dict[str, Any]:
    """The Job that fills `target` from `source` on the spec's database server, with its credentials."""
    settings = spec.upgrade_policy.database_copy
    if settings is None:
        raise ValueError("spec.upgradePolicy.databaseCopy is not set")
    if settings.image is None:
        raise ValueError("spec.upgradePolicy.databaseCopy.image is not set")
    if _checked(source) == _checked(target):
        raise ValueError("a database is never copied onto itself")
    host, port, _, credentials = database_coordinates(spec)

    def secret(variable: str, key: str) -> dict[str, Any]:
        return {"name": variable, "valueFrom": {"secretKeyRef": {"name": credentials, "key": key}}}

    env = [
        {"name": "PGHOST", "value": host},
        {"name": "PGPORT", "value": str(port)},
        secret("PGUSER", "username"),
        secret("PGPASSWORD", "password"),
        {"name": "PGCONNECT_TIMEOUT", "value": "10"},
        # The pods' TLS settings: the copy reads the same server as Keycloak does, as strictly.
        *database_tls.libpq_env(spec),
        {"name": "HOME", "value": _WORK},
        {"name": "KCOP_SOURCE", "value": source},
        {"name": "KCOP_TARGET", "value": target},
        {"name": "KCOP_MARKER", "value": marker(owner, name)},
    ]
    mounts = [{"name": "work", "mountPath": _WORK}]
    volumes: list[dict[str, Any]] = [{"name": "work", "emptyDir": {}}]
    root_cert = database_tls.volume(spec)
    if root_cert is not None:
        mounts.append(database_tls.mount(database_tls.COPY_DIR))
        volumes.append(root_cert)
    container = {
        "name": "copy",
        "image": settings.image,
        "command": ["sh", "-c", SCRIPT],
        "env": env,
        "volumeMounts": mounts,
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "readOnlyRootFilesystem": True,
        },
    }
    pod_spec: dict[str, Any] = {
        "containers": [container],
        "volumes": volumes,
        "enableServiceLinks": False,
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": 65532,
            "runAsGroup": 65532,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
    }
    if spec.image_pull_secrets:  # the copy image may live in the same private registry as Keycloak's
        pod_spec["imagePullSecrets"] = [{"name": s.name} for s in spec.image_pull_secrets]
    placement = spec.scheduling
    if placement is not None and placement.node_selector:
        pod_spec["nodeSelector"] = dict(placement.node_selector)
    if placement is not None and placement.tolerations:
        pod_spec["tolerations"] = [t.wire() for t in placement.tolerations]
    # One try: a failed copy rolls the upgrade back, and a new upgrade makes a new Job. It ends at the copy's
    # timeout, so a copy given up on holds no connection or lock past it.
    return jobs.one_try(owner, name, COMPONENT, pod_spec, int(durations.parse(settings.timeout)))


def job_phase(obj: dict[str, Any] | None) -> CopyPhase | None:
    """None when absent; completed or failed by the Job's conditions; pending otherwise."""
    if obj is None:
        return None
    end = jobs.ended(obj)
    if end is None:
        return "pending"
    return "completed" if end.succeeded else "failed"


_COPY_SUFFIX: Final = re.compile(r"_([0-9]+_[0-9]+_[0-9]+|[0-9a-f]{10})_[0-9a-f]{6}$")


def is_copy_of(name: str, base: str) -> bool:
    """`name` is one copy_name made from `base` (whose start a long name cut)."""
    found = _COPY_SUFFIX.search(name)
    return found is not None and found.start() > 0 and base.startswith(name[: found.start()])


def running_database(deployment: dict[str, Any] | None, tier: str = "managed") -> str:
    """The database a Deployment's Keycloak container uses (KC_DB_URL_DATABASE; cnpg: the Cluster of
    KC_DB_URL_HOST); "" when none is read."""
    if tier == "cnpg":
        return cnpg_copy.running_cluster(deployment)
    return rollout.keycloak_env(deployment, "KC_DB_URL_DATABASE") or ""


def canonical_database(
    spec: KeycloakSpec,
    recorded: DatabaseStatus | None,
    blue_green: BlueGreenStatus | None,
    track: str,
    running: str = "",
) -> DatabaseStatus:
    """The database of the canonical Deployment, from the best evidence there is, for as long as the spec
    still names the database a copy stands in for (a user who changes the spec's database name moves the
    pods there):

    1. green's, once green has been promoted into the canonical Deployment;
    2. the one recorded in status.database;
    3. blue's, as the upgrade in status.blueGreen recorded it (status.database lost or never written);
    4. the one the running canonical Deployment uses, when it is a copy made from the spec's database (every
       status lost: a restore without status);
    5. the spec's.
    Never the spec's original while a copy serves: that would start the new version on the old data."""
    wanted = spec_database(spec)
    bg = blue_green
    same_spec = bg is not None and bg.spec_database in ("", wanted)
    promoted = bg is not None and bg.state in ("Promoting", "Completed") and track == bg.green_track
    if bg is not None and same_spec and promoted and _believable(bg.green_database):
        return _standing_in(bg.green_database, wanted)
    if recorded is not None and _believable(recorded.name) and recorded.copied_from == wanted:
        return DatabaseStatus(name=recorded.name, copied_from=recorded.copied_from)
    if bg is not None and same_spec and _believable(bg.blue_database) and track == bg.blue_track:
        return _standing_in(bg.blue_database, wanted)
    copy_of = names.is_cnpg_copy_cluster_of if spec.database.cnpg is not None else is_copy_of
    if running and copy_of(running, wanted):
        return _standing_in(running, wanted)
    return DatabaseStatus(name=wanted)


def _believable(database: str) -> bool:
    """A database name read from status is believed only in the shape the operator writes: whoever may write
    the status could otherwise put URL parameters into the pods' JDBC URL (`keycloak?sslmode=disable`) or a
    connection string into the copy's."""
    return bool(re.fullmatch(pt.DATABASE, database)) and len(database) <= MAX_DATABASE


def _standing_in(database: str, wanted: str) -> DatabaseStatus:
    return (
        DatabaseStatus(name=database)
        if database == wanted
        else DatabaseStatus(name=database, copied_from=wanted)
    )
