"""Where each file of one running cluster lives inside its state dir."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

SERVICE_CIDR = "10.96.0.0/16"
FIRST_SERVICE_IP = "10.96.0.1"  # the `kubernetes` Service; must be in the apiserver cert's SANs
POD_CIDR = "10.244.0.0/16"  # kwok hands out pod IPs from here; must not overlap SERVICE_CIDR


@dataclass(frozen=True)
class Layout:
    root: Path

    @property
    def pki(self) -> Path:
        return self.root / "pki"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def etcd_data(self) -> Path:
        return self.root / "etcd-data"

    @property
    def kubeconfig(self) -> Path:
        """The admin kubeconfig handed to users and tests."""
        return self.root / "kubeconfig"

    def component_kubeconfig(self, name: str) -> Path:
        return self.root / "kubeconfigs" / f"{name}.kubeconfig"

    def cert_dir(self, name: str) -> Path:
        return self.root / "serving-certs" / name

    def log(self, name: str) -> Path:
        return self.logs / f"{name}.log"

    @property
    def recipe(self) -> Path:
        """The fingerprint of the recipe the running components were started with (components.recipe())."""
        return self.root / "recipe.sha256"

    @property
    def audit_policy(self) -> Path:
        return self.root / "audit-policy.yaml"

    @property
    def audit_log(self) -> Path:
        """The API server's audit log of Secret requests (JSON lines): who read which Secret, for tests."""
        return self.logs / "audit.log"

    @property
    def service_account_kubeconfigs(self) -> Path:
        return self.root / "service-accounts"
