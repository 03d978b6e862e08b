"""The operator's own API adapter against the real API server: its HTTP session, and what it makes of the
server's refusals."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio import client, config

import localcluster
from keycloak_operator.shell.kube import KEYCLOAKS, SECRETS, ApiError, Kube, Resource
from keycloak_operator.shell.replication import paging
from tests.integration.support.audit import operator_reads
from tests.integration.support.kubectl import Kubectl, wait_for

pytestmark = pytest.mark.integration

HOLD = "test.keycloak-operator/hold"


@pytest.fixture
async def kube(cluster: localcluster.Cluster) -> AsyncIterator[Kube]:
    configuration = client.Configuration()
    await config.load_kube_config(config_file=str(cluster.kubeconfig), client_configuration=configuration)
    adapter = Kube(client.ApiClient(configuration))
    yield adapter
    pool = adapter.api.rest_client.pool_manager.connector
    await adapter.close()
    assert pool is not None and pool.closed  # the connection pool goes with the adapter


def secret(namespace: str, name: str, finalizers: list[str] | None = None) -> dict:
    meta: dict = {"name": name, "namespace": namespace}
    if finalizers:
        meta["finalizers"] = finalizers
    return {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "stringData": {"k": "v"}}


async def test_requests_go_through_a_session_that_does_not_consult_the_environment_each_time(
    kube: Kube, namespace: str
) -> None:
    session = kube.api.rest_client.pool_manager
    assert session.trust_env is False
    made = await kube.apply(secret(namespace, "through-the-pool"))
    assert made["metadata"]["name"] == "through-the-pool"


async def test_a_terminating_namespace_is_told_apart_from_other_refusals(
    kube: Kube, kubectl: Kubectl, namespace: str
) -> None:
    with pytest.raises(ApiError) as invalid:
        await kube.apply(secret(namespace, "Not_A_Name"))
    assert invalid.value.status == 422 and not invalid.value.namespace_terminating

    # A finalizer nobody removes holds the namespace in Terminating, as a slow controller would.
    await kube.apply(secret(namespace, "held", [HOLD]))
    kubectl.run("delete", "namespace", namespace, "--wait=false")
    wait_for(
        "namespace terminating",
        lambda: (kubectl.get("namespace", namespace) or {}).get("status", {}).get("phase") == "Terminating",
        timeout=30,
    )
    try:
        with pytest.raises(ApiError) as refused:
            await kube.apply(secret(namespace, "new"))
        assert refused.value.status == 403 and refused.value.namespace_terminating
    finally:
        release = '{"metadata":{"finalizers":null}}'
        kubectl.run("patch", "secret", "held", "-n", namespace, "--type=merge", "-p", release)


async def test_a_write_into_a_namespace_that_is_gone_is_told_apart_too(kube: Kube) -> None:
    """The API server's 404 for the namespace itself (not for the object): a pass that read a Keycloak just
    before its namespace's last step writes into nothing, which is not a fault."""
    with pytest.raises(ApiError) as gone:
        await kube.create(secret("kcop-no-such-namespace", "x"))
    assert gone.value.status == 404 and gone.value.namespace_terminating
    assert await kube.get(SECRETS, "kcop-no-such-namespace", "x") is None  # a read of nothing stays None


async def test_a_status_patch_of_an_object_deleted_meanwhile_says_so_instead_of_failing(
    kube: Kube, crds: None, namespace: str
) -> None:
    assert await kube.patch_status(KEYCLOAKS, namespace, "gone", {"phase": "Running"}) is False


async def test_a_name_that_got_past_validation_still_addresses_nothing_else(
    cluster: localcluster.Cluster, kube: Kube, kubectl: Kubectl, namespace_factory: Any
) -> None:
    """Every path segment is quoted: a Secret name of `../../team-b/secrets/victim` (the CRD refuses it;
    this is the second line) is a name in the asking namespace, which does not exist, and never team-b's
    Secret. The API server's audit log shows no read of it."""
    team_a, team_b = namespace_factory("a"), namespace_factory("b")
    kubectl.run("create", "secret", "generic", "victim", "-n", team_b, "--from-literal=password=team-b")
    hostile = [
        f"../../{team_b}/secrets/victim",
        f"..%2F..%2F{team_b}%2Fsecrets%2Fvictim",
        "victim/..",
        "%2e%2e",
    ]
    for name in [*hostile, "..", "."]:
        try:
            found = await kube.get(SECRETS, team_a, name)
        except ApiError as refused:  # refused as a name (400), before any object was looked up
            assert refused.status == 400, refused
            continue
        assert found is None, name  # looked up in team-a, as one name: not found
    reads = [r for r in operator_reads(cluster, team_b) if r.name == "victim"]
    assert reads == []
    assert [r.name for r in operator_reads(cluster, team_a)] != []  # the log does see this adapter's GETs


async def test_a_kind_the_server_does_not_serve_reads_as_absent(kube: Kube, namespace: str) -> None:
    """A CRD not installed: the API server answers 404 with a plain-text page, not a Status object. The
    adapter reads that as "no such object" (failing on the body instead would stall whatever reads an
    optional kind, a ServiceMonitor where no Prometheus Operator runs, say)."""
    unserved = Resource("never-installed.kcop.dev", "v1", "things")
    assert await kube.get(unserved, namespace, "anything") is None


async def test_a_kind_the_server_does_not_serve_is_not_served(kube: Kube) -> None:
    """API discovery answers 404 for a group the server does not know: serves() says False rather than
    failing, so an optional kind (a ServiceMonitor where no Prometheus Operator runs) is skipped."""
    assert await kube.serves(Resource("never-installed.kcop.dev", "v1", "things")) is False
    assert await kube.serves(SECRETS) is True


async def test_a_listing_is_read_page_by_page_with_the_servers_continue_tokens(
    kube: Kube, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kubernetes' chunking as the replication rounds use it (shell/replication/paging.py), on the real
    API server: each page holds at most the limit, and the pages together hold every object once."""
    for i in range(5):
        await kube.apply(secret(namespace, f"paged-{i}"))
    first, token = await kube.list_page(SECRETS, namespace, limit=2)
    assert len(first) == 2 and token is not None
    monkeypatch.setattr(paging, "PAGE_SIZE", 2)
    tally = await paging.read_kind(kube, SECRETS, namespace, 100)
    names = sorted(o["metadata"]["name"] for o in tally.kept)
    assert [n for n in names if n.startswith("paged-")] == [f"paged-{i}" for i in range(5)]
    assert all("managedFields" not in o["metadata"] for o in tally.kept)  # dropped as pages arrive
    with pytest.raises(ApiError) as refused:  # a token the server did not make is refused, never "the end"
        await kube.list_page(SECRETS, namespace, limit=2, token="not-a-token")
    assert refused.value.status in (400, 410), refused.value
