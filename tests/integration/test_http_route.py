"""spec.httpRoute on the real control plane, with the Gateway API's own CRDs (standard channel, from its Go
module at a pinned version: localcluster/gateway_api.py) and kwok's pods. No Gateway controller runs: what is
checked is the HTTPRoute the API server accepted, against the CRDs' schema and rules, and its life."""

from __future__ import annotations

from pathlib import Path

import pytest

from keycloak_operator.core import children
from keycloak_operator.kernel import names
from localcluster import gateway_api, manifests
from localcluster.operator_process import OperatorProcess
from tests.integration.support.kubectl import Kubectl, events, wait_for

pytestmark = pytest.mark.integration

KC = f"keycloaks.{names.GROUP}"
ROUTES = "httproutes.gateway.networking.k8s.io"
GROUP = "gateway.networking.k8s.io"
HOST = "sso.example.com"


@pytest.fixture(scope="module")
def gateway_api_crds(cluster) -> None:
    """Installed once, idempotently, and left: they are cluster-wide and nothing else reads them."""
    gateway_api.install(cluster.kubeconfig)


def condition(kubectl: Kubectl, ns: str, name: str, type_: str) -> dict | None:
    conditions = ((kubectl.get(KC, name, ns) or {}).get("status") or {}).get("conditions", [])
    return next((c for c in conditions if c["type"] == type_), None)


def degraded_by(kubectl: Kubectl, ns: str, name: str, reason: str, field: str) -> dict | None:
    c = condition(kubectl, ns, name, "Degraded")
    ok = c is not None and c["status"] == "True" and c["reason"] == reason and c["message"].startswith(field)
    return c if ok else None


def apply(kubectl: Kubectl, ns: str, name: str, **spec) -> None:
    kubectl.apply(manifests.db_secret(ns))
    kubectl.apply(manifests.keycloak(name, ns, replicas=1, **spec))


def test_a_route_attaches_to_an_allowed_gateway_a_refused_one_is_named_and_removal_deletes_it(
    cluster,
    kubectl: Kubectl,
    session_operator_stopped: None,
    gateway_api_crds: None,
    namespace: str,
    tmp_path: Path,
):
    # The CRD's own rule: a route with no host (no hostnames, no spec.hostname) never reaches the operator.
    no_host = manifests.keycloak("open", namespace, httpRoute={"parentRefs": [{"name": "shared"}]})
    refused = kubectl.apply(no_host, check=False)
    assert refused.returncode != 0 and "spec.httpRoute.hostnames" in refused.stderr
    hostile = manifests.keycloak(
        "open",
        namespace,
        hostname={"hostname": f"https://{HOST}"},
        httpRoute={"parentRefs": [{"name": "../shared"}]},
    )
    refused = kubectl.apply(hostile, check=False)
    assert refused.returncode != 0 and "spec.httpRoute.parentRefs[0].name" in refused.stderr

    operator = OperatorProcess(cluster.kubeconfig, tmp_path)
    operator.start("--all-namespaces", f"--gateway={namespace}/shared", "--ingress-host=.example.com")
    try:
        spec = {
            "hostname": {"hostname": f"https://{HOST}"},
            "ingress": {"className": "nginx", "path": "/"},
            "httpRoute": {"parentRefs": [{"name": "shared", "sectionName": "https"}]},
        }
        apply(kubectl, namespace, "gw", **spec)
        name = names.http_route("gw")
        route = wait_for("the HTTPRoute", lambda: kubectl.get(ROUTES, name, namespace), timeout=60)
        uid = kubectl.get(KC, "gw", namespace)["metadata"]["uid"]
        assert [r["uid"] for r in route["metadata"]["ownerReferences"]] == [uid]
        # As the API server stored it, after its defaults.
        assert route["spec"]["parentRefs"] == [
            {
                "group": GROUP,
                "kind": "Gateway",
                "namespace": namespace,
                "name": "shared",
                "sectionName": "https",
            }
        ]
        assert route["spec"]["hostnames"] == [HOST]
        (rule,) = route["spec"]["rules"]
        assert rule["matches"] == [{"path": {"type": "PathPrefix", "value": "/"}}]
        assert rule["backendRefs"] == [
            {
                "group": "",
                "kind": "Service",
                "name": names.public_service("gw"),
                "port": children.HTTP_PORT,
                "weight": 1,
            }
        ]
        # Exactly what the Ingress routes: the same prefix to the same Service port, not the management one.
        ingress = wait_for("the Ingress", lambda: kubectl.get("ingress", names.ingress("gw"), namespace))
        ((path,),) = [r["http"]["paths"] for r in ingress["spec"]["rules"]]
        service = wait_for(
            "the Service", lambda: kubectl.get("service", names.public_service("gw"), namespace)
        )
        ports = {p["name"]: p["port"] for p in service["spec"]["ports"]}
        assert path["path"] == rule["matches"][0]["path"]["value"]
        assert ports[path["backend"]["service"]["port"]["name"]] == rule["backendRefs"][0]["port"]
        assert rule["backendRefs"][0]["port"] != children.MANAGEMENT_PORT

        # A Gateway the installation does not list: named on the Keycloak and in one Warning; the route it
        # made stays as it was, and the rest of the Keycloak is reconciled.
        apply(kubectl, namespace, "gw", **{**spec, "httpRoute": {"parentRefs": [{"name": "other"}]}})
        c = wait_for(
            "Degraded naming spec.httpRoute.parentRefs",
            lambda: degraded_by(kubectl, namespace, "gw", "HTTPRouteNotAllowed", "spec.httpRoute.parentRefs"),
            timeout=60,
        )
        assert f"Gateway {namespace}/other" in c["message"]
        warnings = wait_for(
            "a Warning naming spec.httpRoute.parentRefs",
            lambda: events(kubectl, namespace, name="gw", type_="Warning", reason="HTTPRouteNotAllowed"),
            timeout=60,
        )
        assert warnings[0]["message"].startswith("spec.httpRoute.parentRefs")
        assert (
            kubectl.get(ROUTES, name, namespace)["metadata"]["resourceVersion"]
            == (route["metadata"]["resourceVersion"])
        )
        assert kubectl.get("deployment", names.deployment("gw"), namespace) is not None

        # A host outside the Ingress's host allow-list is refused the same way.
        outside = {"parentRefs": [{"name": "shared"}], "hostnames": ["sso.evil-example.com"]}
        apply(kubectl, namespace, "gw", **{**spec, "httpRoute": outside})
        wait_for(
            "Degraded naming spec.httpRoute.hostnames",
            lambda: degraded_by(kubectl, namespace, "gw", "HTTPRouteNotAllowed", "spec.httpRoute.hostnames"),
            timeout=60,
        )

        # Removed from the spec: the route this Keycloak made goes, the Ingress stays.
        apply(kubectl, namespace, "gw", **{k: v for k, v in spec.items() if k != "httpRoute"})
        wait_for("the HTTPRoute deleted", lambda: kubectl.get(ROUTES, name, namespace) is None, timeout=60)
        wait_for(
            "no longer Degraded",
            lambda: (condition(kubectl, namespace, "gw", "Degraded") or {}).get("status") == "False",
            timeout=60,
        )
        assert kubectl.get("ingress", names.ingress("gw"), namespace) is not None
    finally:
        operator.stop()


def test_a_route_of_the_same_name_the_keycloak_did_not_make_is_left_alone(
    cluster,
    kubectl: Kubectl,
    operator: OperatorProcess,
    gateway_api_crds: None,
    namespace: str,
):
    theirs = {
        "apiVersion": f"{GROUP}/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": names.http_route("taken"), "namespace": namespace},
        "spec": {"parentRefs": [{"name": "theirs"}], "hostnames": ["theirs.example.com"]},
    }
    kubectl.apply(theirs)
    before = kubectl.get(ROUTES, names.http_route("taken"), namespace)
    apply(
        kubectl,
        namespace,
        "taken",
        hostname={"hostname": f"https://{HOST}"},
        httpRoute={"parentRefs": [{"name": "shared"}]},
    )
    wait_for(
        "Degraded: ChildNotOwned",
        lambda: degraded_by(
            kubectl, namespace, "taken", "ChildNotOwned", f"HTTPRoute {names.http_route('taken')}"
        ),
        timeout=60,
    )
    after = kubectl.get(ROUTES, names.http_route("taken"), namespace)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert after["spec"]["hostnames"] == ["theirs.example.com"]
    # Removing spec.httpRoute does not delete it either.
    apply(kubectl, namespace, "taken")
    wait_for(
        "the Keycloak reconciled without a route",
        lambda: (condition(kubectl, namespace, "taken", "Degraded") or {}).get("status") == "False",
        timeout=60,
    )
    assert kubectl.get(ROUTES, names.http_route("taken"), namespace) is not None
