"""Command lines of the control-plane components, all bound to loopback."""

from __future__ import annotations

import hashlib
from pathlib import Path

from localcluster import hostnet, layout, nodes, pki
from localcluster.layout import POD_CIDR, SERVICE_CIDR, Layout
from localcluster.pki import Pki

SA_ISSUER = "https://kubernetes.default.svc.cluster.local"


def etcd(bin_dir: Path, layout: Layout, client_port: int, peer_port: int) -> list[str]:
    client, peer = f"http://127.0.0.1:{client_port}", f"http://127.0.0.1:{peer_port}"
    return [
        str(bin_dir / "etcd"),
        "--name=kcop",
        f"--data-dir={layout.etcd_data}",
        f"--listen-client-urls={client}",
        f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=kcop={peer}",
        "--initial-cluster-state=new",
        # Throwaway data: durability is not worth the fsync latency on every write.
        "--unsafe-no-fsync",
        "--log-level=warn",
    ]


# Only Secret requests, at Metadata level (who, verb, which object; never the data): tests prove from the
# API server's own record that the operator never reads another namespace's Secrets.
AUDIT_POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    resources: [{group: "", resources: [secrets]}]
  - level: None
"""


def kube_apiserver(
    bin_dir: Path, pki: Pki, etcd_url: str, port: int, layout: Layout, advertise: str
) -> list[str]:
    """`advertise`: the machine's own address (hostnet.primary_address). Pods on the real node reach the API
    server as pods do anywhere, through the `kubernetes` Service (10.96.0.1:443), whose endpoint is this
    address: so the server listens on every address, not loopback only. Every request still needs a client
    certificate or a token (RBAC); anonymous requests reach only /healthz, /readyz, /livez and /version."""
    return [
        str(bin_dir / "kube-apiserver"),
        f"--etcd-servers={etcd_url}",
        "--bind-address=0.0.0.0",
        f"--advertise-address={advertise}",
        f"--secure-port={port}",
        f"--tls-cert-file={pki.apiserver.cert}",
        f"--tls-private-key-file={pki.apiserver.key}",
        f"--client-ca-file={pki.ca.cert}",
        # Presented to a real node's kubelet, which authenticates it against the same CA.
        f"--kubelet-client-certificate={pki.kubelet_client.cert}",
        f"--kubelet-client-key={pki.kubelet_client.key}",
        # A real node's hostname (its node name) is not in any DNS this machine asks: dial its IP.
        "--kubelet-preferred-address-types=InternalIP,Hostname",
        f"--service-account-key-file={pki.service_account_pub}",
        f"--service-account-signing-key-file={pki.service_account_key}",
        f"--service-account-issuer={SA_ISSUER}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        # Real authorization: the operator is tested under its own ServiceAccount and RBAC.
        "--authorization-mode=Node,RBAC",
        "--allow-privileged=true",
        "--profiling=false",
        f"--audit-policy-file={layout.audit_policy}",
        f"--audit-log-path={layout.audit_log}",
        "--audit-log-maxsize=100",  # MB, then rotated (one backup kept)
        "--audit-log-maxbackup=1",
        "--audit-log-mode=blocking",  # each event is on disk before its request is answered
    ]


def _serving(layout: Layout, pki: Pki, name: str, port: int) -> list[str]:
    kubeconfig = layout.component_kubeconfig(name)
    return [
        f"--kubeconfig={kubeconfig}",
        # Delegated authn/authz let /metrics be protected and /healthz stay anonymous, as in a real cluster.
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        # The client CA is given directly: looking it up in kube-system logs an error per retry because this
        # cluster has no front proxy (no request-header CA).
        "--authentication-skip-lookup=true",
        f"--client-ca-file={pki.ca.cert}",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        f"--cert-dir={layout.cert_dir(name)}",
        "--leader-elect=false",
        "--profiling=false",
    ]


def kube_controller_manager(bin_dir: Path, layout: Layout, pki: Pki, port: int) -> list[str]:
    return [
        str(bin_dir / "kube-controller-manager"),
        *_serving(layout, pki, "kube-controller-manager", port),
        # The default controller set, as a real cluster runs it (deployment, replicaset, endpointslice,
        # garbage collector, namespace, serviceaccount and its tokens, node lifecycle, ...).
        "--controllers=*",
        "--use-service-account-credentials=true",
        f"--service-account-private-key-file={pki.service_account_key}",
        f"--root-ca-file={pki.ca.cert}",
        f"--cluster-signing-cert-file={pki.ca.cert}",
        f"--cluster-signing-key-file={pki.ca.key}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
    ]


def kube_scheduler(bin_dir: Path, layout: Layout, pki: Pki, port: int) -> list[str]:
    return [str(bin_dir / "kube-scheduler"), *_serving(layout, pki, "kube-scheduler", port)]


def kwok(bin_dir: Path, admin_kubeconfig: Path, port: int) -> list[str]:
    return [
        str(bin_dir / "kwok"),
        f"--kubeconfig={admin_kubeconfig}",
        # Only its own nodes: a real node's kubelet reports its pods itself, and kwok managing it would
        # overwrite their status (a kwok IP and Running while the real sandbox was failing).
        f"--manage-nodes-with-label-selector={nodes.KWOK_SELECTOR}",
        f"--cidr={POD_CIDR}",
        # Stages come from Stage objects in the cluster (seeded with kwok's defaults) so tests can add
        # their own at run time; kwok then ignores its built-in stages.
        "--enable-crds=Stage",
        # The default node stage heartbeats only every ~10 minutes and counts on kwok renewing node Leases;
        # without leases the node lifecycle controller marks nodes NotReady after its grace period and
        # flips every pod on them to Ready=False.
        "--node-lease-duration-seconds=40",
        # Serves /healthz; also where kwok would answer logs/exec, which nothing here uses.
        f"--server-address=127.0.0.1:{port}",
    ]


def recipe() -> str:
    """A fingerprint of how the components are started: this module's text (their flags, the audit policy)
    and that of the modules it takes settings from (certificates, kwok's nodes, CIDRs and paths). A cluster
    started from another recipe is replaced, not reused, so a harness change (a new apiserver flag, say)
    never meets a cluster that lacks it."""
    digest = hashlib.sha256()
    for module in (__file__, pki.__file__, nodes.__file__, layout.__file__):
        digest.update(Path(module).read_bytes())
    # The `kubernetes` Service's endpoint: a machine whose address changed needs a new cluster.
    digest.update(hostnet.primary_address().encode())
    return digest.hexdigest()
