"""What tests on the real node share about the real Keycloak `sso` the operator runs there: when it has
rolled out a version, its admin credentials, and the realm and confidential client they replicate into it
through the operator's own KeycloakRealm and KeycloakClient resources."""

from __future__ import annotations

import base64
import time
from dataclasses import dataclass
from typing import Any

from keycloak_operator.core import bluegreen as bg
from keycloak_operator.kernel import names
from localcluster import real_keycloak, signins
from tests.integration.support.kubectl import Kubectl, wait_for

KC = f"keycloaks.{names.GROUP}"


def running(kubectl: Kubectl, namespace: str, version: str, replicas: int) -> dict[str, Any] | None:
    """Status once `replicas` pods of `version` are Ready and nothing else is rolling or upgrading."""
    status = (kubectl.get(KC, "sso", namespace) or {}).get("status") or {}
    versions = status.get("versions") or {}
    ok = (
        status.get("phase") == "Running"
        and status.get("readyReplicas") == replicas
        and versions.get("currentVersion", "").startswith(f"{version}#")
        and not versions.get("nextVersion")
        and (status.get("blueGreen") or {}).get("state", bg.IDLE) in (bg.IDLE, bg.COMPLETED)
    )
    return status if ok else None


def admin_credentials(kubectl: Kubectl, namespace: str) -> dict[str, str]:
    """The bootstrap admin the operator generated for `sso`: username and password."""
    admin = kubectl.get("secret", names.admin_secret("sso"), namespace)
    assert admin is not None
    return {k: base64.b64decode(v).decode() for k, v in admin["data"].items()}


def phase(kubectl: Kubectl, resource: str, namespace: str, name: str) -> str:
    return str(((kubectl.get(resource, name, namespace) or {}).get("status") or {}).get("phase", ""))


def replicate(kubectl: Kubectl, namespace: str, **client_spec: Any) -> str:
    """A KeycloakRealm `team` and a confidential KeycloakClient `backend`, Ready; returns its secret."""
    realm = {
        "apiVersion": names.API_VERSION,
        "kind": names.REALM_KIND,
        "metadata": {"name": "team", "namespace": namespace},
        "spec": {"server": {"keycloak": {"name": "sso"}}, "realmName": "team"},
    }
    client = {
        "apiVersion": names.API_VERSION,
        "kind": names.CLIENT_KIND,
        "metadata": {"name": "backend", "namespace": namespace},
        "spec": {
            "realm": {"name": "team"},
            "clientId": "backend",
            "standardFlowEnabled": False,
            "serviceAccountsEnabled": True,
            **client_spec,
        },
    }
    kubectl.apply(realm)
    kubectl.apply(client)
    realms, clients = f"{names.REALM_PLURAL}.{names.GROUP}", f"{names.CLIENT_PLURAL}.{names.GROUP}"
    wait_for("realm replicated", lambda: phase(kubectl, realms, namespace, "team") == "Ready", timeout=120)
    wait_for(
        "client replicated", lambda: phase(kubectl, clients, namespace, "backend") == "Ready", timeout=120
    )
    secret = kubectl.get("secret", names.client_secret("backend"), namespace)
    assert secret is not None
    return base64.b64decode(secret["data"]["clientSecret"]).decode()


@dataclass(frozen=True)
class Serving:
    """A real `sso` serving over HTTP with realm `team`, client `backend` and user `alice` in it."""

    url: str  # its public Service, by ClusterIP
    creds: dict[str, str]  # the bootstrap admin
    login: signins.Login  # alice's sign-ins (password and client credentials grants)


def serve(
    kubectl: Kubectl,
    namespace: str,
    keycloak: dict[str, Any],
    postgres: str,
    version: str,
    postgres_tls: real_keycloak.ServerTls | None = None,
) -> Serving:
    """A PostgreSQL pod (serving TLS only, with `postgres_tls`) and `keycloak` (one replica of `version`),
    Ready; then the realm, client and user that sign-ins use."""
    for obj in real_keycloak.postgres(namespace, postgres, postgres_tls):
        kubectl.apply(obj)
    kubectl.apply(keycloak)
    wait_for(
        f"Keycloak {version} Ready",
        lambda: running(kubectl, namespace, version, replicas=1),
        timeout=600,
        interval=2,
    )
    secret = replicate(kubectl, namespace, directAccessGrantsEnabled=True)
    service = kubectl.get("service", names.public_service("sso"), namespace)
    assert service is not None
    url = f"http://{service['spec']['clusterIP']}:8080"
    creds = admin_credentials(kubectl, namespace)
    real_keycloak.create_user(url, creds, "team", "alice", "alice-password-1")
    token_url = f"{url}/realms/team/protocol/openid-connect/token"
    return Serving(url, creds, signins.Login(token_url, "backend", secret, "alice", "alice-password-1"))


# Longer than MERGE3's max_interval in Keycloak's `kubernetes` stack (30 s): two views that were going to
# merge have merged by then.
SIDE_BY_SIDE_S = 45.0


def ready_pods(kubectl: Kubectl, namespace: str) -> dict[str, str]:
    """Ready server pods of `sso` (not terminating) -> their track."""
    selector = f"{names.LABEL_INSTANCE}=sso,{names.LABEL_COMPONENT}={names.COMPONENT_SERVER}"
    out = {}
    for pod in kubectl.list("pods", namespace, selector=selector):
        conditions = {c["type"]: c["status"] for c in (pod.get("status") or {}).get("conditions") or []}
        if conditions.get("Ready") == "True" and not pod["metadata"].get("deletionTimestamp"):
            out[pod["metadata"]["name"]] = pod["metadata"]["labels"][names.LABEL_TRACK]
    return out


class SideBySide:
    """Watches both colours run side by side: `observe` (called while waiting for the upgrade) notes when a
    ready pod of each track first ran together; `hold` then keeps checking, every 2 s, that they still do
    until `seconds` have passed since then: an observation window, not a wait for a result (a merge of two
    views can only be ruled out over time). `seen` is every pod observed -> its track."""

    def __init__(self, kubectl: Kubectl, namespace: str, seconds: float = SIDE_BY_SIDE_S) -> None:
        self.kubectl, self.namespace, self.seconds = kubectl, namespace, seconds
        self.since: float | None = None
        self.seen: dict[str, str] = {}

    def observe(self) -> bool:
        """True once both tracks have run together (a wait_for condition may call this in each poll)."""
        pods = ready_pods(self.kubectl, self.namespace)
        self.seen.update(pods)
        if self.since is None and sorted(pods.values()) == sorted(names.TRACKS):
            self.since = time.monotonic()
        return self.since is not None

    def hold(self) -> dict[str, str]:
        assert self.since is not None, "both colours never ran side by side"
        until = self.since + self.seconds
        while True:  # at least one look, however long they already ran together
            pods = ready_pods(self.kubectl, self.namespace)
            assert sorted(pods.values()) == sorted(names.TRACKS), pods
            self.seen.update(pods)
            if time.monotonic() >= until:
                return self.seen
            time.sleep(2)
