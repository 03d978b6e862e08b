"""Replication at scale against the real Keycloak: first sync of N clients (with their roles, protocol
mappers and service-account roles), G groups and S client scopes in M namespaces, then a quiet resync.

    uv run python bench/bench_replication_sync.py [--clients 1000] [--namespaces 50] [--groups 100]
        [--scopes 10] [--roles 2] [--mappers 2] [--no-service-accounts] [--quiet 25] [--rate 50]
        [--namespace-rate 10]

    # a quick run (first sync about 20 s, about 4 minutes with Keycloak's start and cleanup):
    # --clients 50 --namespaces 5 --groups 10 --scopes 2

One realm (external mode, a Keycloak 26.7.3 process from the Maven Central distribution) holds one realm
role and allows M namespaces. Created at once, round-robin over the namespaces:
- N KeycloakClients, each with `--roles` client roles and `--mappers` protocol mappers; half confidential (so
  N/2 client Secrets are written), and those have a service account with the realm role mapped;
- S KeycloakClientScopes (one protocol mapper each), one in each of the first S namespaces, attached by
  every client of that namespace as an optional client scope;
- G KeycloakGroups: in each namespace the first is top-level and each next one a subgroup of the previous,
  each with an attribute, the realm role and a client role of its namespace's first client mapped.
First sync = from the first resource created until every resource of every kind is Ready (and then checked
in Keycloak: clients, scopes, groups by walking the tree, and a sample of clients' roles, mappers and
service-account roles). Quiet = `--quiet` seconds with nothing changing (the operator resyncs every 10 s):
Keycloak admin writes and GETs (Keycloak's own HTTP metrics, by URI template) and Kubernetes writes on the
operator's kinds, Secrets and Events (kube-apiserver's metrics). Also the operator's peak RSS (VmHWM). The
operator's write rate limits are the flags. Not a test: prints figures, asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import ssl
import sys
import tempfile
import time
import urllib.request
import uuid
from collections import Counter
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import localcluster  # noqa: E402
from keycloak_operator.kernel import names  # noqa: E402
from localcluster.keycloak import KeycloakProcess  # noqa: E402
from localcluster.keycloak_api import KeycloakApi  # noqa: E402
from localcluster.metrics import writes  # noqa: E402
from localcluster.operator_process import OperatorProcess  # noqa: E402

GROUP_PATH = f"/apis/{names.API_VERSION}"


def api_client(cluster: localcluster.Cluster) -> httpx.Client:
    pki = cluster.state_dir / "pki"
    tls = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    tls.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
    return httpx.Client(base_url=cluster.server, verify=tls, timeout=60)


def post(http: httpx.Client, path: str, body: dict) -> None:
    r = http.post(path, json=body)
    if r.status_code >= 300:
        raise SystemExit(f"POST {path}: {r.status_code} {r.text[:300]}")


# Greedy up to the last "}": templated URIs hold braces themselves (uri="/admin/realms/{realm}/clients").
_KC_COUNT = re.compile(r"^http_server_requests_seconds_count\{(?P<labels>.*)\}\s+(?P<value>\S+)$", re.M)
ROLE = "bench-user"


def keycloak_requests(kc: KeycloakProcess) -> Counter[tuple[str, str]]:
    """(method, URI template) -> requests so far, from Keycloak's own HTTP metrics."""
    with urllib.request.urlopen(f"{kc.management_url}/metrics", timeout=30) as r:
        text = r.read().decode()
    counts: Counter[tuple[str, str]] = Counter()
    for m in _KC_COUNT.finditer(text):
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m["labels"]))
        counts[(labels.get("method", ""), labels.get("uri", ""))] += int(float(m["value"]))
    return counts


def delta(before: Counter[tuple[str, str]], after: Counter[tuple[str, str]]) -> Counter[tuple[str, str]]:
    d = Counter(after)
    d.subtract(before)
    return Counter({k: v for k, v in d.items() if v > 0})


def admin(counts: Counter[tuple[str, str]], methods: set[str]) -> int:
    return sum(v for (method, uri), v in counts.items() if method in methods and uri.startswith("/admin"))


def peak_rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def ready_count(http: httpx.Client, plural: str, wanted: set[str]) -> int:
    items = http.get(f"{GROUP_PATH}/{plural}").json()["items"]
    return sum(
        1
        for o in items
        if o["metadata"]["namespace"] in wanted and (o.get("status") or {}).get("phase") == "Ready"
    )


def group_paths(keycloak: KeycloakApi, realm: str) -> list[str]:
    paths: list[str] = []
    level = keycloak.call("GET", f"/{realm}/groups?briefRepresentation=true&max=10000") or []
    while level:
        nxt: list[dict] = []
        for g in level:
            paths.append(g["path"])
            if g.get("subGroupCount", 1):
                nxt += keycloak.call("GET", f"/{realm}/groups/{g['id']}/children?max=10000") or []
        level = nxt
    return paths


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--clients", type=int, default=1000)
    p.add_argument("--namespaces", type=int, default=50)
    p.add_argument("--groups", type=int, default=100)
    p.add_argument(
        "--scopes", type=int, default=10, help="client scopes, one in each of the first S namespaces"
    )
    p.add_argument("--roles", type=int, default=2, help="client roles per client")
    p.add_argument("--mappers", type=int, default=2, help="protocol mappers per client")
    p.add_argument(
        "--service-accounts",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="confidential clients get a service account with the realm role mapped",
    )
    p.add_argument("--quiet", type=float, default=25.0)
    p.add_argument("--rate", type=float, default=50.0)
    p.add_argument("--namespace-rate", type=float, default=10.0)
    args = p.parse_args()
    if args.clients < args.namespaces or args.scopes > args.namespaces:
        raise SystemExit(
            "need --clients >= --namespaces >= --scopes (each namespace's groups map its client)"
        )

    cluster = localcluster.ensure_running(real_node=False)  # kwok only
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(ROOT / "deploy" / "crds"))
    http = api_client(cluster)
    run = uuid.uuid4().hex[:6]
    home = f"rb-{run}-home"
    spaces = [f"rb-{run}-{i:03d}" for i in range(args.namespaces)]
    kc = KeycloakProcess(args=["--metrics-enabled=true"])
    operator = OperatorProcess(
        cluster.kubeconfig,
        Path(tempfile.mkdtemp(prefix="bench-repl-")),
        resync_seconds=10,
        extra_env={
            "KCOP_REPLICATION_WRITES_PER_SECOND": str(args.rate),
            "KCOP_REPLICATION_NAMESPACE_WRITES_PER_SECOND": str(args.namespace_rate),
        },
    )
    try:
        kc.start()
        keycloak = KeycloakApi(kc)
        operator.start("--all-namespaces")
        for ns in [home, *spaces]:
            post(http, "/api/v1/namespaces", {"metadata": {"name": ns}})
        secret = {
            "metadata": {"name": "adm"},
            "stringData": {"username": kc.admin_username, "password": kc.admin_password},
        }
        post(http, f"/api/v1/namespaces/{home}/secrets", secret)
        realm = {
            "apiVersion": names.API_VERSION,
            "kind": names.REALM_KIND,
            "metadata": {"name": "main"},
            "spec": {
                "server": {"external": {"url": kc.url, "adminSecret": {"name": "adm"}}},
                "realmName": f"bench-{run}",
                "clientNamespaces": spaces,
                "roles": [{"name": ROLE}],
            },
        }
        post(http, f"{GROUP_PATH}/namespaces/{home}/{names.REALM_PLURAL}", realm)
        deadline = time.monotonic() + 120
        while keycloak.realm(f"bench-{run}") is None:
            if time.monotonic() > deadline:
                raise SystemExit("realm never appeared in Keycloak")
            time.sleep(0.5)

        kc_before = keycloak_requests(kc)
        started = time.monotonic()
        for j in range(args.scopes):
            body = {
                "apiVersion": names.API_VERSION,
                "kind": names.CLIENT_SCOPE_KIND,
                "metadata": {"name": f"s{j:02d}"},
                "spec": {
                    "realm": {"name": "main", "namespace": home},
                    "name": f"bench-s{j:02d}",
                    "protocol": "openid-connect",
                    "protocolMappers": [
                        {
                            "name": "scope-claim",
                            "protocolMapper": "oidc-hardcoded-claim-mapper",
                            "config": {
                                "claim.name": "scope",
                                "claim.value": f"s{j}",
                                "jsonType.label": "String",
                                "access.token.claim": "true",
                            },
                        }
                    ],
                },
            }
            post(http, f"{GROUP_PATH}/namespaces/{spaces[j]}/{names.CLIENT_SCOPE_PLURAL}", body)
        for i in range(args.clients):
            n = i % len(spaces)
            confidential = i % 2 == 1
            spec: dict = {
                "realm": {"name": "main", "namespace": home},
                "clientId": f"c{i:04d}",
                "publicClient": not confidential,
                "redirectUris": [f"https://app-{i}.example/*"],
                "roles": [{"name": f"r{k}"} for k in range(args.roles)],
                "protocolMappers": [
                    {
                        "name": f"m{k}",
                        "protocolMapper": "oidc-hardcoded-claim-mapper",
                        "config": {
                            "claim.name": f"claim{k}",
                            "claim.value": f"c{i}",
                            "jsonType.label": "String",
                            "access.token.claim": "true",
                        },
                    }
                    for k in range(args.mappers)
                ],
            }
            if n < args.scopes:
                spec["optionalClientScopes"] = [f"bench-s{n:02d}"]
            if confidential and args.service_accounts:
                spec["serviceAccountsEnabled"] = True
                spec["serviceAccountRoles"] = {"realm": [ROLE]}
            body = {
                "apiVersion": names.API_VERSION,
                "kind": names.CLIENT_KIND,
                "metadata": {"name": f"c{i:04d}"},
                "spec": spec,
            }
            post(http, f"{GROUP_PATH}/namespaces/{spaces[n]}/{names.CLIENT_PLURAL}", body)
        nested = 0
        for j in range(args.groups):
            n, depth = j % len(spaces), j // len(spaces)
            gspec: dict = {
                "realm": {"name": "main", "namespace": home},
                "name": f"g{j:03d}",
                "attributes": {"team": [spaces[n]]},
                "realmRoles": [ROLE],
            }
            if args.roles:
                gspec["clientRoles"] = {f"c{n:04d}": ["r0"]}  # client n is the namespace's first
            if depth:
                gspec["parent"] = f"g{j - len(spaces):03d}"
                nested += 1
            body = {
                "apiVersion": names.API_VERSION,
                "kind": names.GROUP_KIND,
                "metadata": {"name": f"g{j:03d}"},
                "spec": gspec,
            }
            post(http, f"{GROUP_PATH}/namespaces/{spaces[n]}/{names.GROUP_PLURAL}", body)
        created = time.monotonic() - started

        wanted = set(spaces)
        kinds = {
            names.CLIENT_PLURAL: args.clients,
            names.CLIENT_SCOPE_PLURAL: args.scopes,
            names.GROUP_PLURAL: args.groups,
        }
        ready_at: dict[str, float] = {}
        deadline = time.monotonic() + 1800
        while len(ready_at) < len(kinds):
            counts = {k: ready_count(http, k, wanted) for k in kinds if k not in ready_at}
            for k, ready in counts.items():
                if ready == kinds[k]:
                    ready_at[k] = time.monotonic() - started
            if time.monotonic() > deadline:
                raise SystemExit(
                    f"not all Ready after 30 minutes: {counts} of {kinds}; see {operator.log_path}"
                )
            time.sleep(0.5)
        first_sync = max(ready_at.values())
        first = delta(kc_before, keycloak_requests(kc))
        rss_first = peak_rss_mb(operator.proc.pid) if operator.proc else None

        # In Keycloak (after the counts above: these GETs are the bench's own).
        realm_name = f"bench-{run}"
        in_keycloak = len(keycloak.clients(realm_name))
        scopes_in = sum(
            1
            for s in keycloak.call("GET", f"/{realm_name}/client-scopes") or []
            if s["name"].startswith("bench-s")
        )
        groups_in = group_paths(keycloak, realm_name)
        sample = []
        for i in sorted({0, 1, args.clients - 1}):
            c = keycloak.client(realm_name, f"c{i:04d}") or {}
            roles = keycloak.call("GET", f"/{realm_name}/clients/{c['id']}/roles") or []
            sa = ""
            if c.get("serviceAccountsEnabled"):
                user = keycloak.call("GET", f"/{realm_name}/clients/{c['id']}/service-account-user")
                mapped = keycloak.call("GET", f"/{realm_name}/users/{user['id']}/role-mappings/realm") or []
                sa = f", SA realm roles {sorted(r['name'] for r in mapped if r['name'] == ROLE)}"
            sample.append(
                f"c{i:04d}: {len(roles)} roles, {len(c.get('protocolMappers') or [])} mappers, "
                f"optional scopes {c.get('optionalClientScopes')}{sa}"
            )

        time.sleep(12)  # the rounds the status writes triggered, and one resync
        kc_quiet = keycloak_requests(kc)
        kube_quiet = http.get("/metrics").text
        time.sleep(args.quiet)
        quiet = delta(kc_quiet, keycloak_requests(kc))
        kube_writes = writes(
            kube_quiet,
            http.get("/metrics").text,
            {
                names.REALM_PLURAL,
                names.CLIENT_PLURAL,
                names.CLIENT_SCOPE_PLURAL,
                names.GROUP_PLURAL,
                "secrets",
                "events",
            },
        )
        rss = peak_rss_mb(operator.proc.pid) if operator.proc else None
        # Rounds that reached the groups in the window (a round lists the realm's top-level groups once; the
        # bench's own reads are before the window). The window's edges cut rounds: a round's clients may fall
        # in it and its groups not, or the reverse, so divide the by-URI counts below, not the total.
        group_rounds = quiet[("GET", "/admin/realms/{realm}/groups")]
        write, every = {"POST", "PUT", "DELETE"}, {"GET", "POST", "PUT", "DELETE"}
        gets = admin(quiet, {"GET"})
        tokens = sum(v for (_, u), v in first.items() if u.endswith("/token"))
        # The operator writes with POST/PUT/PATCH; DELETEs in this window come from the namespace controller
        # retrying namespaces of earlier runs (the apiserver's metrics do not say who asked).
        ours = sum(v for k, v in kube_writes.items() if k[0] != "DELETE")
        when = time.strftime("%Y-%m-%d %H:%M")
        print(
            f"\nmachine: {os.cpu_count()} CPUs, {cpu_model()}; Keycloak {kc.version}; "
            f"limits {args.rate}/s global, {args.namespace_rate}/s per namespace; {when}"
        )
        accounts = args.clients // 2 if args.service_accounts else 0
        print(
            f"scale: {args.clients} clients ({args.roles} roles, {args.mappers} mappers each; "
            f"{accounts} with a service account), {args.groups} groups ({nested} nested), "
            f"{args.scopes} client scopes, in {args.namespaces} namespaces"
        )
        rows = [
            ("resources created in Kubernetes (API POSTs)", f"{sum(kinds.values())} in {created:.1f} s"),
            ("first sync, all Ready", f"{first_sync:.1f} s"),
            *(
                (f"... {k} all Ready at", f"{t:.1f} s")
                for k, t in sorted(ready_at.items(), key=lambda kv: kv[1])
            ),
            ("Keycloak admin writes (POST/PUT/DELETE) during the first sync", str(admin(first, write))),
            ("Keycloak admin requests (all methods) during the first sync", str(admin(first, every))),
            ("token requests during the first sync", str(tokens)),
            (
                "in Keycloak: clients (incl. 6 built-in), bench scopes, groups",
                f"{in_keycloak}, {scopes_in}, {len(groups_in)}",
            ),
            (
                f"Keycloak admin writes in {args.quiet:.0f} s quiet (resync every 10 s)",
                str(admin(quiet, write)),
            ),
            (
                "Keycloak admin GETs in the same window",
                f"{gets} ({group_rounds} rounds listed the groups; by URI below)",
            ),
            ("Kubernetes POST/PUT/PATCH on the operator's kinds, Secrets, Events, same window", str(ours)),
        ]
        if rss is not None and rss_first is not None:
            rows.append(
                (
                    "operator peak RSS (VmHWM), after first sync / after quiet",
                    f"{rss_first:.0f} / {rss:.0f} MB",
                )
            )
        print("| figure | value |\n|---|---|")
        for name, value in rows:
            print(f"| {name} | {value} |")
        print("\nsample in Keycloak:\n  " + "\n  ".join(sample))
        print("\nquiet window, Keycloak requests by (method, URI template):")
        for (m, u), v in sorted(quiet.items(), key=lambda kv: -kv[1]):
            print(f"  {v:7d}  {m} {u}")
        print("\nfirst sync, Keycloak admin requests by (method, URI template), top 15:")
        for (m, u), v in sorted(first.items(), key=lambda kv: -kv[1])[:15]:
            print(f"  {v:7d}  {m} {u}")
        if kube_writes:
            print(f"\nKubernetes writes in the quiet window, by (verb, resource, subresource): {kube_writes}")
    finally:
        # Delete while the operator and Keycloak still run, so the finalizers are released properly.
        for ns in [home, *spaces]:
            http.delete(f"/api/v1/namespaces/{ns}")
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and any(
            http.get(f"/api/v1/namespaces/{ns}").status_code == 200 for ns in [home, *spaces]
        ):
            time.sleep(2)
        operator.stop()
        kc.stop()
        kc.cleanup()


if __name__ == "__main__":
    main()
