"""Real Keycloak pods made by the operator on the real node: a 2-replica Keycloak on a real PostgreSQL pod
becomes Ready through its real probes, its two pods form one JGroups view (read from Keycloak's own log),
a realm and a confidential client replicate into it, a token is issued through its public Service, the
operator signs in as its own client in master (the bootstrap admin deleted, a realm still replicates, the
client secret rotates: ADR 0023; the deletion outlasts the pods' restart by the upgrade), and a
patch upgrade rolled in place (the default strategy), with the operator SIGKILLed halfway, fails not one
of the sign-ins sent throughout. Each sign-in is traced to the pod that answered it (kube-proxy's choice,
read from conntrack), and the pods' JGroups views are read from their logs all along. The same patch upgrade
under BlueGreen, with a SIGKILL too, is test_real_production.py's.

The images are built here (hack/build-*-image.sh, ADR 0013). The operator runs as a local process that
resolves names through the cluster's DNS, as a pod would (OperatorProcess(cluster_dns=...)).
"""

from __future__ import annotations

import base64
import time
from typing import Any

import pytest

import localcluster
from keycloak_operator.kernel import names
from localcluster import app_images, real_keycloak, realnode, signins
from localcluster.node_config import NODE_NAME
from localcluster.operator_process import OperatorProcess
from tests.integration.support import jgroups, real_resources, sampler
from tests.integration.support.kubectl import Kubectl, events, wait_for
from tests.integration.support.real_resources import replicate

pytestmark = pytest.mark.integration

KEYCLOAK_VERSION = "26.7.3"
FROM_VERSION = "26.7.0"  # one minor line with KEYCLOAK_VERSION: Keycloak supports rolling between them
KC = f"keycloaks.{names.GROUP}"


@pytest.fixture(scope="module")
def images(cluster: localcluster.Cluster, real_node: realnode.RealNode) -> dict[str, str]:
    return {
        "keycloak": app_images.keycloak(cluster, KEYCLOAK_VERSION),
        "from": app_images.keycloak(cluster, FROM_VERSION),
        "postgres": app_images.postgres(cluster),
    }


def keycloak(namespace: str, image: str, **extra: Any) -> dict[str, Any]:
    return real_keycloak.keycloak("sso", namespace, image, **extra)


def what_served(watch: sampler.Sampler, at: float) -> str:
    """The public Service's ready endpoints and the pods, in the samples around `at` (for a failure)."""
    near = [x for x in watch.samples if at - 3 <= x.at <= at + 3]
    lines = []
    for sample in near:
        ready = sorted(sample.ready_addresses.get(names.public_service("sso"), frozenset()))
        pods = ", ".join(
            f"{p.name}({p.image.rsplit(':', 1)[-1]},{'ready' if p.ready else 'not ready'}"
            f"{',terminating' if p.terminating else ''})"
            for p in sample.pods.values()
            if p.labels.get(names.LABEL_INSTANCE) == "sso"
        )
        lines.append(f"  {sample.at - at:+.1f}s: service endpoints {ready}; pods {pods}")
    return "\n".join(lines)


def views(kubectl: Kubectl, namespace: str) -> dict[str, tuple[str, int, set[str]]]:
    """pod -> (channel, size, members) of the last cluster view its Keycloak logged."""
    out = {}
    for pod in kubectl.list("pods", namespace, selector=f"{names.LABEL_INSTANCE}=sso"):
        name = pod["metadata"]["name"]
        logs = kubectl.run("logs", "-n", namespace, name, check=False).stdout
        seen = jgroups.views_in(logs)
        if seen:
            channel, _, members = seen[-1]
            out[name] = (channel, len(members), set(members))
    return out


def running(kubectl: Kubectl, namespace: str, version: str) -> dict[str, Any] | None:
    return real_resources.running(kubectl, namespace, version, replicas=2)


def start_keycloak(
    kubectl: Kubectl, namespace: str, images: dict[str, str], image: str, **extra: Any
) -> dict:
    for obj in real_keycloak.postgres(namespace, images["postgres"]):
        kubectl.apply(obj)
    kubectl.apply(keycloak(namespace, image, **extra))
    version = image.rsplit(":", 1)[1]
    return wait_for(
        f"2 real Keycloak {version} pods Ready through their probes",
        lambda: running(kubectl, namespace, version),
        timeout=480,
        interval=2,
    )


def base_url(kubectl: Kubectl, namespace: str) -> str:
    service = kubectl.get("service", names.public_service("sso"), namespace)
    assert service is not None
    return f"http://{service['spec']['clusterIP']}:8080"


def token_for(url: str, form: dict[str, str]) -> dict[str, Any] | None:
    return real_keycloak.token(url, form)


def create_user(kubectl: Kubectl, namespace: str, username: str, password: str) -> None:
    """A user in realm `team` (users are not replicated kinds yet), as the generated bootstrap admin."""
    creds = real_resources.admin_credentials(kubectl, namespace)
    real_keycloak.create_user(base_url(kubectl, namespace), creds, "team", username, password)


def rolling(kubectl: Kubectl, namespace: str) -> bool:
    """The new version is rolling out."""
    status = (kubectl.get(KC, "sso", namespace) or {}).get("status") or {}
    return bool((status.get("versions") or {}).get("nextVersion"))


def images_by_ip(watch: sampler.Sampler) -> dict[str, str]:
    """Every pod IP the sampler saw in the namespace -> the image its pod ran."""
    return {ip: pod.image for sample in watch.samples for ip, pod in sample.pods.items()}


def operator_login(kubectl: Kubectl, namespace: str) -> dict[str, Any]:
    """The operator's own login Secret of `sso`: its data decoded, and its metadata."""
    found = kubectl.get("secret", names.operator_login_secret("sso"), namespace)
    assert found is not None
    data = {k: base64.b64decode(v).decode() for k, v in (found.get("data") or {}).items()}
    return {**data, "metadata": found["metadata"]}


def as_operator(kubectl: Kubectl, namespace: str, method: str, path: str, body: Any = None) -> Any:
    """One admin API call as the operator's own client (client credentials against master)."""
    login = operator_login(kubectl, namespace)
    form = {"grant_type": "client_credentials", "client_id": login["clientId"]}
    status, answer = real_keycloak.admin(
        base_url(kubectl, namespace), {**form, "client_secret": login["clientSecret"]}, method, path, body
    )
    assert status < 300, (method, path, status, answer)
    return answer


def master_token(kubectl: Kubectl, namespace: str, form: dict[str, str]) -> dict[str, Any] | None:
    return token_for(f"{base_url(kubectl, namespace)}/realms/master/protocol/openid-connect/token", form)


def check_the_operators_own_login(kubectl: Kubectl, namespace: str) -> None:
    """Issue 26, finding 7 (ADR 0023): after the first round the operator signs in as its own client in
    master; the bootstrap admin deleted, a realm still replicates; the client secret rotates without it."""
    login = operator_login(kubectl, namespace)
    keycloak_uid = kubectl.get(KC, "sso", namespace)["metadata"]["uid"]
    assert [(r["uid"], r.get("controller")) for r in login["metadata"]["ownerReferences"]] == [
        (keycloak_uid, True)
    ]
    wait_for(
        "the Keycloak says the operator's own login is in place",
        lambda: events(kubectl, namespace, name="sso", reason="OperatorLoginReady"),
        timeout=60,
    )
    (client,) = as_operator(kubectl, namespace, "GET", "/admin/realms/master/clients?clientId=kcop-operator")
    assert client["serviceAccountsEnabled"] and not client["publicClient"]
    assert not (client["standardFlowEnabled"] or client["implicitFlowEnabled"])
    assert not client["directAccessGrantsEnabled"]
    account = as_operator(
        kubectl, namespace, "GET", f"/admin/realms/master/clients/{client['id']}/service-account-user"
    )
    roles = as_operator(
        kubectl, namespace, "GET", f"/admin/realms/master/users/{account['id']}/role-mappings/realm"
    )
    assert "admin" in {r["name"] for r in roles}

    # The bootstrap admin deleted (by the operator's client): it can no longer sign in.
    bootstrap = real_resources.admin_credentials(kubectl, namespace)
    (user,) = as_operator(
        kubectl, namespace, "GET", f"/admin/realms/master/users?username={bootstrap['username']}&exact=true"
    )
    as_operator(kubectl, namespace, "DELETE", f"/admin/realms/master/users/{user['id']}")
    assert (
        master_token(kubectl, namespace, {"grant_type": "password", "client_id": "admin-cli", **bootstrap})
        is None
    )

    # A rotation asked on the Secret, and a new realm whose round carries it out: both done without the
    # bootstrap admin, and the old secret refused afterwards.
    old = login["clientSecret"]
    kubectl.run("annotate", "secret", names.operator_login_secret("sso"), "-n", namespace,
                f"{names.ANNOTATION_ROTATE_LOGIN}=now")  # fmt: skip
    kubectl.apply(
        {
            "apiVersion": names.API_VERSION,
            "kind": names.REALM_KIND,
            "metadata": {"name": "second", "namespace": namespace},
            "spec": {"server": {"keycloak": {"name": "sso"}}, "realmName": "second"},
        }
    )
    realms = f"{names.REALM_PLURAL}.{names.GROUP}"
    wait_for(
        "a realm replicated after the bootstrap admin's deletion",
        lambda: real_resources.phase(kubectl, realms, namespace, "second") == "Ready",
        timeout=120,
    )

    def rotated() -> dict[str, Any] | None:
        now = operator_login(kubectl, namespace)
        annotations = now["metadata"].get("annotations") or {}
        done = now["clientSecret"] != old and "pendingClientSecret" not in now
        return now if done and names.ANNOTATION_ROTATE_LOGIN not in annotations else None

    new = wait_for("the client secret rotated", rotated, timeout=60)
    assert as_operator(kubectl, namespace, "GET", "/admin/realms/second")["realm"] == "second"
    form = {"grant_type": "client_credentials", "client_id": "kcop-operator"}
    assert master_token(kubectl, namespace, {**form, "client_secret": old}) is None
    assert master_token(kubectl, namespace, {**form, "client_secret": new["clientSecret"]}) is not None
    assert new.get("previousClientSecret") == old  # kept for a database from before the rotation
    assert events(kubectl, namespace, name="sso", reason="OperatorLoginRotated")
    messages = " ".join(e["message"] for e in events(kubectl, namespace, name="sso"))
    assert old not in messages and new["clientSecret"] not in messages


def test_a_real_keycloak_replicates_issues_tokens_and_upgrades_under_load_failing_no_sign_in(
    cluster: localcluster.Cluster,
    kubectl: Kubectl,
    images: dict[str, str],
    session_operator_stopped: None,
    real_operator: OperatorProcess,
    namespace: str,
) -> None:
    """A 2-replica Keycloak on a real PostgreSQL pod, both on the real node, becomes Ready through its real
    probes and forms one JGroups view; a realm and a client replicate into it and tokens are issued through
    its Service. Then 26.7.0 to 26.7.3 (one minor line: Keycloak supports rolling) under the default
    strategy, which rolls in place in one cache cluster, with sign-ins sent back to back from before the
    change until after it completed, and the operator SIGKILLed and restarted in the middle of it: not one
    sign-in may fail, each is answered by a Keycloak pod of the version then serving, and no view takes in a
    pod of another cache cluster."""
    status = start_keycloak(kubectl, namespace, images, images["from"])
    pods = kubectl.list("pods", namespace, selector=f"{names.LABEL_INSTANCE}=sso")
    assert {p["spec"]["nodeName"] for p in pods} == {NODE_NAME}
    assert all(p["status"]["containerStatuses"][0]["containerID"].startswith("containerd://") for p in pods)
    assert status["versions"]["currentVersion"].startswith(f"{FROM_VERSION}#")
    # A first creation runs no preflight, so its pods run plain `start`; on the suite's image, built with the
    # options they set (app_images.keycloak), Keycloak compares them and builds nothing first (ADR 0026).
    servers = kubectl.list("pods", namespace, selector=f"{names.LABEL_COMPONENT}={names.COMPONENT_SERVER}")
    assert len(servers) == 2, [p["metadata"]["name"] for p in servers]
    for pod in servers:
        assert pod["spec"]["containers"][0]["args"] == ["start"], pod["spec"]["containers"][0]
        log = kubectl.run("logs", "-n", namespace, pod["metadata"]["name"], "-c", "keycloak").stdout
        assert "Updating the server image" not in log and "Changes detected" not in log, log[-2000:]

    # One JGroups view of both pods, as Keycloak itself reports it.
    def one_view() -> dict | None:
        seen = views(kubectl, namespace)
        sizes = {size for _, size, _ in seen.values()}
        return seen if len(seen) == 2 and sizes == {2} else None

    wait_for("both pods in one JGroups view of 2", one_view, timeout=120, interval=2)

    # A realm and a client the operator replicates; a token through the Service; a wrong secret refused.
    secret = replicate(kubectl, namespace, directAccessGrantsEnabled=True)
    url = f"{base_url(kubectl, namespace)}/realms/team/protocol/openid-connect/token"
    form = {"grant_type": "client_credentials", "client_id": "backend", "client_secret": secret}
    issued = wait_for("a token through the public Service", lambda: token_for(url, form), timeout=60)
    assert issued["token_type"].lower() == "bearer" and issued["access_token"].count(".") == 2
    assert token_for(url, {**form, "client_secret": "not-the-secret"}) is None
    create_user(kubectl, namespace, "alice", "alice-password-1")
    check_the_operators_own_login(kubectl, namespace)
    login = signins.Login(
        f"{base_url(kubectl, namespace)}/realms/team/protocol/openid-connect/token",
        "backend",
        secret,
        "alice",
        "alice-password-1",
    )
    load = signins.SignIns(login, max_seconds=900).start()
    watch = sampler.for_cluster(cluster, namespace)
    watch.interval = 0.5
    with watch, jgroups.ViewWatch(kubectl, namespace, "sso") as cache_views:
        try:
            wait_for("sign-ins before the change", lambda: load.count() >= 20, timeout=60)
            changed_at = time.monotonic()
            kubectl.apply(keycloak(namespace, images["keycloak"]))
            # The operator dies mid-upgrade with no chance to clean up, and a new one takes over.
            wait_for("the upgrade under way", lambda: rolling(kubectl, namespace), timeout=120)
            real_operator.kill()
            real_operator.start("--all-namespaces")
            wait_for(
                f"{KEYCLOAK_VERSION} rolled out after the operator's SIGKILL",
                lambda: running(kubectl, namespace, KEYCLOAK_VERSION),
                timeout=600,
                interval=1,
            )
            done_at = time.monotonic()
            settled = done_at + 10  # kube-proxy and the endpoints have dropped the old pods by then
            wait_for(
                "sign-ins after the change",
                lambda: sum(a.at > settled for a in list(load.attempts)) >= 20,
                timeout=90,
            )
        finally:
            attempts = load.stop()
    failed = [a for a in attempts if not a.ok]
    grants = {a.grant for a in attempts}
    assert grants == {"client_credentials", "password"}
    assert not failed, (
        f"{len(failed)} of {len(attempts)} sign-ins failed, from {failed[0].at - changed_at:+.1f} s to "
        f"{failed[-1].at - changed_at:+.1f} s after the change; first: {failed[:2]}\n"
        + what_served(watch, failed[0].at)
    )
    pods = kubectl.list("pods", namespace, selector=f"{names.LABEL_INSTANCE}=sso")
    assert {
        p["spec"]["containers"][0]["image"] for p in pods if not p["metadata"].get("deletionTimestamp")
    } == {images["keycloak"]}

    # Every sign-in was answered by a Keycloak pod: the old version's before the change, the new one's
    # once it had completed.
    by_ip = images_by_ip(watch)
    unanswered = [a for a in attempts if a.served_by not in by_ip]
    assert not unanswered, f"{len(unanswered)} sign-ins not traced to a pod, first: {unanswered[:3]}"
    before = {by_ip[a.served_by] for a in attempts if a.at < changed_at}
    after = {by_ip[a.served_by] for a in attempts if a.at > settled}
    assert before == {images["from"]} and after == {images["keycloak"]}, (before, after)
    assert len({a.served_by for a in attempts if a.at > settled}) == 2  # both replicas serve

    # A roll keeps one cache cluster, which old and new pods share by design: no view took in a pod of any
    # other.
    assert len(set(cache_views.cache_cluster_of.values())) == 1, cache_views.cache_cluster_of
    assert not cache_views.crossings(), "\n".join(cache_views.crossings())

    # The pods were all replaced, each starting with KC_BOOTSTRAP_ADMIN_* set: the deleted bootstrap admin did
    # not come back (master has a user, the operator's service account), and the operator still signs in.
    bootstrap = real_resources.admin_credentials(kubectl, namespace)
    path = f"/admin/realms/master/users?username={bootstrap['username']}&exact=true"
    assert as_operator(kubectl, namespace, "GET", path) == []
    assert (
        master_token(kubectl, namespace, {"grant_type": "password", "client_id": "admin-cli", **bootstrap})
        is None
    )
