"""What any replicated object's metadata and status say, read as anyone's input: its key, its flags (created,
deleting, preserved, the revocation clock, the remote id and content hash the operator recorded), and the
verdicts every kind words the same way (an invalid spec, a namespace the operator did not read)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.sync import NOT_READ, UNREADABLE, Verdict
from keycloak_operator.kernel import names

Obj = Mapping[str, Any]


def key_of(obj: Obj) -> ObjectKey:
    meta = obj["metadata"]
    return ObjectKey(str(obj["kind"]), str(meta["namespace"]), str(meta["name"]))


def _created(obj: Obj) -> datetime:
    stamp = obj["metadata"].get("creationTimestamp")
    if not stamp:
        return datetime.max.replace(tzinfo=UTC)  # not stored yet: the youngest claim
    return datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))


_EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
_LATEST = datetime(2200, 1, 1, tzinfo=UTC)


def _timestamp(value: Any) -> datetime | None:
    """A status timestamp, which anyone able to write status could have set to anything: read as UTC when
    it names no zone, and kept within sane years so that date arithmetic on it cannot overflow."""
    try:
        when = datetime.fromisoformat(str(value).replace("Z", "+00:00")) if value else None
    except ValueError:
        return None
    if when is None:
        return None
    when = when if when.tzinfo is not None else when.replace(tzinfo=UTC)
    return min(max(when, _EARLIEST), _LATEST)


def forbidden_since(obj: Obj) -> datetime | None:
    """When the resource's status turned Forbidden (the revocation clock), if it is Forbidden."""
    status = obj.get("status") or {}
    return _timestamp(status.get("forbiddenSince")) if status.get("phase") == "Forbidden" else None


def resource_flags(obj: Obj) -> dict[str, Any]:
    meta = obj["metadata"]
    annotations = meta.get("annotations") or {}
    return {
        "created": _created(obj),
        "deleting": bool(meta.get("deletionTimestamp")),
        "preserve": str(annotations.get(names.ANNOTATION_PRESERVE, "")).lower() == "true",
        "forbidden_since": forbidden_since(obj),
        "keycloak_id": _keycloak_id(obj),
        "was_pending": (obj.get("status") or {}).get("phase") == "Pending",
        "written_hash": _written_hash(obj),
    }


def _written_hash(obj: Obj) -> str | None:
    """The content hash the resource's status recorded (written by the operator, read as untrusted)."""
    found = (obj.get("status") or {}).get("contentHash")
    return found if isinstance(found, str) and found else None


def _keycloak_id(obj: Obj) -> str | None:
    """The remote id the resource's status names (written by the operator, read as untrusted)."""
    found = (obj.get("status") or {}).get("keycloakId")
    return found if isinstance(found, str) and found else None


def invalid_spec(e: ValidationError) -> Verdict:
    first = e.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    return Verdict("Error", "InvalidSpec", f"spec.{where}: {first['msg']}")


def unreadable_namespace(what: str, namespace: str) -> Verdict:
    return Verdict(
        "Error",
        UNREADABLE,
        f"{what}: namespace {namespace} was not read by the operator ({NOT_READ}); nothing is written or "
        "released for this resource until it is",
    )
