"""A throwaway CA and the certificates one loopback control plane needs, made with `cryptography`.

Every cluster start makes a new set in its state dir: nothing here is meant to outlive the cluster.
EC P-256 keys because they are fast to generate and every component accepts them.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=365)
SERVER_SANS_DNS = (
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)


@dataclass(frozen=True)
class CertPair:
    cert: Path
    key: Path


@dataclass(frozen=True)
class Pki:
    ca: CertPair
    apiserver: CertPair
    admin: CertPair
    controller_manager: CertPair
    scheduler: CertPair
    kubelet_client: CertPair  # the API server's identity towards kubelets (logs, exec, port-forward)
    service_account_key: Path  # private: signs tokens (apiserver) and the token controller (KCM)
    service_account_pub: Path  # public: verifies tokens


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _name(cn: str, org: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    if org:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    return x509.Name(attrs)


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    path.write_bytes(pem)
    path.chmod(0o600)


def _write_cert(cert: x509.Certificate, path: Path) -> None:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _builder(
    subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    # Backdated a little so a cert is valid at once even with small clock differences between processes.
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
    )


class _Ca:
    def __init__(self, pair: CertPair) -> None:
        self.key: ec.EllipticCurvePrivateKey = _new_key()
        self.name = _name("kcop-local-ca")
        cert = (
            _builder(self.name, self.name, self.key.public_key())
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self.key, hashes.SHA256())
        )
        _write_cert(cert, pair.cert)
        _write_key(self.key, pair.key)

    def issue(
        self,
        pair: CertPair,
        cn: str,
        org: str | None = None,
        *,
        server: bool = False,
        dns: tuple[str, ...] = (),
        ips: tuple[str, ...] = (),
    ) -> CertPair:
        key = _new_key()
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = (
            _builder(_name(cn, org), self.name, key.public_key())
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        )
        if dns or ips:
            names: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
            names += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        _write_cert(builder.sign(self.key, hashes.SHA256()), pair.cert)
        _write_key(key, pair.key)
        return pair


def at(directory: Path) -> Pki:
    """The file names of a cluster's PKI, whether written yet or not."""

    def pair(stem: str) -> CertPair:
        return CertPair(directory / f"{stem}.crt", directory / f"{stem}.key")

    return Pki(
        ca=pair("ca"),
        apiserver=pair("apiserver"),
        admin=pair("admin"),
        controller_manager=pair("controller-manager"),
        scheduler=pair("scheduler"),
        kubelet_client=pair("kubelet-client"),
        service_account_key=directory / "sa.key",
        service_account_pub=directory / "sa.pub",
    )


def create(directory: Path, service_ip: str) -> Pki:
    """Writes a fresh CA, serving and client certificates and the service-account key pair."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = at(directory)
    ca = _Ca(paths.ca)
    ca.issue(
        paths.apiserver, "kube-apiserver", server=True, dns=SERVER_SANS_DNS, ips=("127.0.0.1", service_ip)
    )
    # system:masters is the built-in superuser group: the admin kubeconfig and kwok (the fake kubelets).
    ca.issue(paths.admin, "kcop-admin", "system:masters")
    # These CNs are bound by the default RBAC policy to exactly what each component needs.
    ca.issue(paths.controller_manager, "system:kube-controller-manager")
    ca.issue(paths.scheduler, "system:kube-scheduler")
    # system:masters so a real kubelet's webhook authorizer lets the API server proxy logs and exec to it.
    ca.issue(paths.kubelet_client, "kube-apiserver-kubelet-client", "system:masters")
    sa_key = _new_key()
    _write_key(sa_key, paths.service_account_key)
    paths.service_account_pub.write_bytes(
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return paths


class _LoadedCa(_Ca):
    """The cluster's existing CA, read back from its files to sign certificates for later components."""

    def __init__(self, pair: CertPair) -> None:  # not super().__init__: that would make a new CA
        key = serialization.load_pem_private_key(pair.key.read_bytes(), password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise TypeError(f"{pair.key} is not an EC key")
        self.key = key
        self.name = x509.load_pem_x509_certificate(pair.cert.read_bytes()).subject


def issue(
    ca: CertPair,
    pair: CertPair,
    cn: str,
    org: str | None = None,
    *,
    server: bool = False,
    dns: tuple[str, ...] = (),
    ips: tuple[str, ...] = (),
) -> CertPair:
    """A certificate signed by the cluster's CA, for a component started after the control plane."""
    pair.cert.parent.mkdir(parents=True, exist_ok=True)
    return _LoadedCa(ca).issue(pair, cn, org, server=server, dns=dns, ips=ips)


def serving(directory: Path, dns: tuple[str, ...], ips: tuple[str, ...] = ()) -> tuple[CertPair, CertPair]:
    """A CA of its own and a server certificate it signed, for a test server that speaks TLS."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_pair = CertPair(directory / "ca.crt", directory / "ca.key")
    leaf = CertPair(directory / "tls.crt", directory / "tls.key")
    _Ca(ca_pair).issue(leaf, dns[0] if dns else "server", server=True, dns=dns, ips=ips)
    return ca_pair, leaf
