"""The Gateway API's CRDs, taken from its Go module at a pinned version and cached, for the tests of a
Keycloak's HTTPRoute. No Gateway controller runs: the API server stores and validates the route (with the
CRDs' own schema and CEL rules), which is what the operator's part is checked against.

The module comes through the Go module proxy the way the control plane's modules do (hack/build-*.sh):
`go mod download` into the module cache, then the standard channel's CRD files are copied into a cache
directory keyed by the version, so a second run asks nothing of the network.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from localcluster import kubectl, versions

MODULE = "sigs.k8s.io/gateway-api"
CRD_DIR = "config/crd/standard"
# What a route and the Gateways it names need; the rest of the standard channel is not used here.
CRD_FILES = (
    "gateway.networking.k8s.io_gatewayclasses.yaml",
    "gateway.networking.k8s.io_gateways.yaml",
    "gateway.networking.k8s.io_httproutes.yaml",
)
CRD_NAMES = tuple(f.removeprefix("gateway.networking.k8s.io_").removesuffix(".yaml") for f in CRD_FILES)
DOWNLOAD_TIMEOUT = 300


class FetchError(RuntimeError):
    """The Gateway API module could not be fetched."""


def crd_dir() -> Path:
    return versions.cache_root() / f"gateway-api-{versions.GATEWAY_API_VERSION}"


def ensure_crds() -> Path:
    """The directory holding the CRD files, fetched on the first call on this machine."""
    out = crd_dir()
    if (out / ".complete").is_file():
        return out
    work = out.with_name(out.name + ".work")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    env = {**os.environ, "GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "local"}
    proc = subprocess.run(
        ["go", "mod", "download", "-json", f"{MODULE}@{versions.GATEWAY_API_VERSION}"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=DOWNLOAD_TIMEOUT,
        check=False,
    )
    if proc.returncode != 0:
        raise FetchError(
            f"go mod download {MODULE}@{versions.GATEWAY_API_VERSION}: {proc.stderr or proc.stdout}"
        )
    source = Path(json.loads(proc.stdout)["Dir"]) / CRD_DIR
    for name in CRD_FILES:
        shutil.copyfile(source / name, work / name)
    (work / ".complete").touch()
    shutil.rmtree(out, ignore_errors=True)
    work.rename(out)
    return out


def install(kubeconfig: Path) -> None:
    """Installs the CRDs (server-side apply: a second install, or one by another test, changes nothing)
    and waits until the API server serves them. They are cluster-wide and left installed: nothing else on
    the local cluster reads them, and removing them under a running test would break it."""
    directory = ensure_crds()
    for name in CRD_FILES:
        kubectl.run(kubeconfig, "apply", "--server-side", "--force-conflicts", "-f", str(directory / name))
    for crd in CRD_NAMES:
        kubectl.run(
            kubeconfig,
            "wait",
            "--for=condition=Established",
            "--timeout=60s",
            f"crd/{crd}.gateway.networking.k8s.io",
        )
