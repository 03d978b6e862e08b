"""The helm CLI, built from its Go module on first use and cached outside the repository by version."""

from __future__ import annotations

import subprocess
from pathlib import Path

from localcluster import build, versions
from localcluster.node_config import LABEL_KEY, LABEL_VALUE


def ensure_helm() -> Path:
    version = versions.HELM_VERSION
    stamp = f"-X helm.sh/helm/v3/internal/version.version={version}"
    return build.ensure_tool("helm", "helm.sh/helm/v3/cmd/helm", version, stamp)


def operator_on_real_node(image: str) -> list[str]:
    """helm arguments that run the chart's operator from `image` (built here and imported into the real
    node's containerd: nothing to pull) on the real node, which only pods that tolerate its taint reach."""
    repository, tag = image.rsplit(":", 1)
    escaped = LABEL_KEY.replace(".", "\\.")  # helm's --set reads dots as nesting
    values = [
        f"image.repository={repository}",
        f"image.tag={tag}",
        "image.pullPolicy=Never",
        f"tolerations[0].key={LABEL_KEY}",
        "tolerations[0].operator=Exists",
        "tolerations[0].effect=NoSchedule",
    ]
    # --set would read the label's value "true" as a boolean, which a nodeSelector refuses.
    return [*(f"--set={v}" for v in values), f"--set-string=nodeSelector.{escaped}={LABEL_VALUE}"]


CHART = Path(__file__).resolve().parents[2] / "deploy" / "helm" / "keycloak-operator"


def install_operator(kubeconfig: Path, release: str, namespace: str, image: str, *sets: str) -> None:
    """`helm upgrade --install` of the chart with its operator running from `image` on the real node (see
    operator_on_real_node); `sets` are more `--set` values. Returns once helm has applied the release."""
    argv = [str(ensure_helm()), "upgrade", "--install", release, str(CHART), "--namespace", namespace]
    argv += ["--create-namespace", f"--kubeconfig={kubeconfig}", *operator_on_real_node(image)]
    argv += [f"--set={v}" for v in sets]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"helm upgrade --install {release} failed:\n{proc.stderr}")
