"""Every YAML manifest in the docs, and the shipped examples (examples/*.yaml), applied to the real API
server, so no example goes stale.

Each page's examples go into namespaces of their own: a namespace an example names (`platform`, say) becomes
`<prefix>-platform` everywhere it is referred to, and objects that name none go into `<prefix>-default`.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from keycloak_operator.kernel import names
from tests.integration.support.kubectl import Kubectl, wait_for

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(ROOT / "examples").glob("*.yaml")])
BLOCK = re.compile(r"```yaml\n(.*?)```", re.DOTALL)
REPLICATED = (
    f"{names.REALM_PLURAL}.{names.GROUP}",
    f"{names.CLIENT_PLURAL}.{names.GROUP}",
    f"{names.GROUP_PLURAL}.{names.GROUP}",
)


def manifests(page: Path) -> list[dict[str, Any]]:
    text = page.read_text()
    blocks = [text] if page.suffix == ".yaml" else BLOCK.findall(text)
    docs = [d for block in blocks for d in yaml.safe_load_all(block) if d]
    return [d for d in docs if isinstance(d, dict) and "apiVersion" in d and "kind" in d]


def test_the_docs_have_examples() -> None:
    assert sum(len(manifests(p)) for p in PAGES) >= 8


def localize(doc: dict[str, Any], rename: dict[str, str], default: str) -> dict[str, Any]:
    doc = yaml.safe_load(yaml.safe_dump(doc))  # a copy
    meta = doc["metadata"]
    if doc["kind"] == "Namespace":
        meta["name"] = rename[meta["name"]]
        return doc
    meta["namespace"] = rename.get(meta.get("namespace", ""), default)
    spec = doc.get("spec") or {}
    for ref in (spec.get("realm"), (spec.get("server") or {}).get("keycloak")):
        if isinstance(ref, dict) and ref.get("namespace"):
            ref["namespace"] = rename[ref["namespace"]]
    for field in ("clientNamespaces", "realmNamespaces", "identityProviderNamespaces", "flowNamespaces"):
        if field in spec:
            spec[field] = [rename.get(n, n) for n in spec[field]]
    return doc


@pytest.mark.parametrize("page", [p for p in PAGES if manifests(p)], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_example_is_accepted_by_the_api_server(kubectl: Kubectl, crds: None, page: Path) -> None:
    docs = manifests(page)
    prefix = f"doc-{uuid.uuid4().hex[:6]}"
    named = {d["metadata"]["name"] for d in docs if d["kind"] == "Namespace"}
    named |= {d["metadata"]["namespace"] for d in docs if d["metadata"].get("namespace")}
    rename = {n: f"{prefix}-{n}" for n in named}
    default = f"{prefix}-default"
    created = sorted({default, *rename.values()})
    try:
        for ns in created:
            if not any(d["kind"] == "Namespace" and rename.get(d["metadata"]["name"]) == ns for d in docs):
                kubectl.run("create", "namespace", ns)
        for doc in docs:
            local = localize(doc, rename, default)
            kubectl.apply(local)  # fails the test with the API server's message if it is refused
            meta = local["metadata"]
            group = local["apiVersion"].split("/")[0] if "/" in local["apiVersion"] else ""
            res = f"{local['kind'].lower()}s.{group}" if group else local["kind"].lower()
            wait_for(
                f"{res} {meta['name']}", lambda r=res, m=meta: kubectl.get(r, m["name"], m.get("namespace"))
            )
    finally:
        # Realms on the examples' unreachable servers cannot be deleted from Keycloak, so their finalizer is
        # released by hand, once they are being deleted (before that, the operator would put it back).
        for ns in created:
            for res in REPLICATED:
                kubectl.run("delete", res, "--all", "-n", ns, "--wait=false", check=False)
                for obj in kubectl.list(res, ns):
                    kubectl.run(
                        "patch",
                        res,
                        obj["metadata"]["name"],
                        "-n",
                        ns,
                        "--type=merge",
                        "-p",
                        '{"metadata":{"finalizers":null}}',
                        check=False,
                    )
            kubectl.run("delete", "namespace", ns, "--wait=false", check=False)
        wait_for(
            "the examples' namespaces gone",
            lambda: all(kubectl.get("namespace", ns) is None for ns in created),
            timeout=120,
        )
