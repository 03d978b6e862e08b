"""Posts Kubernetes Events about a custom resource (core/v1, which `kubectl describe` shows)."""

from __future__ import annotations

import datetime as dt
import logging
import secrets
from typing import Any

from keycloak_operator.kernel import names
from keycloak_operator.kernel.events import Event
from keycloak_operator.shell.kube import Kube

log = logging.getLogger(__name__)


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def post(kube: Kube, involved: dict[str, Any], event: Event) -> None:
    meta = involved["metadata"]
    now = _now()
    body = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{meta['name']}.{secrets.token_hex(8)}", "namespace": meta["namespace"]},
        "involvedObject": {
            "apiVersion": involved["apiVersion"],
            "kind": involved["kind"],
            "name": meta["name"],
            "namespace": meta["namespace"],
            "uid": meta["uid"],
        },
        "type": event.type,
        "reason": event.reason,
        "message": event.message[:1000],
        "source": {"component": names.OPERATOR_NAME},
        "reportingComponent": names.OPERATOR_NAME,
        "reportingInstance": names.OPERATOR_NAME,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }
    try:
        await kube.create(body)
    except Exception:  # an Event is best effort: never fail a reconcile for it
        log.warning("could not post event %s on %s/%s", event.reason, meta["namespace"], meta["name"])
