"""Thin test-side access to the API server through kubectl: independent of the operator's own adapter."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml

T = TypeVar("T")


class Kubectl:
    def __init__(self, binary: Path, kubeconfig: Path):
        self.binary = binary
        self.kubeconfig = kubeconfig

    def run(
        self, *args: str, input: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [str(self.binary), f"--kubeconfig={self.kubeconfig}", *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=60,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {result.stderr}")
        return result

    def apply(self, obj: dict[str, Any] | str, *, check: bool = True) -> subprocess.CompletedProcess[str]:
        text = obj if isinstance(obj, str) else yaml.safe_dump(obj)
        return self.run("apply", "-f", "-", input=text, check=check)

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        args = ["get", kind, name, "-o", "json"]
        if namespace:
            args += ["-n", namespace]
        result = self.run(*args, check=False)
        if result.returncode != 0:
            if "NotFound" in result.stderr:
                return None
            raise AssertionError(result.stderr)
        return dict(json.loads(result.stdout))

    def list(self, kind: str, namespace: str | None, selector: str | None = None) -> list[dict[str, Any]]:
        """Objects of `kind` in `namespace`; None: in every namespace."""
        args = ["get", kind, "-o", "json", *(["-n", namespace] if namespace else ["-A"])]
        if selector:
            args += ["-l", selector]
        return list(json.loads(self.run(*args).stdout)["items"])


def _selector(**fields: str | None) -> str:
    return ",".join(f"{k}={v}" for k, v in fields.items() if v)


def events(
    kubectl: Kubectl,
    namespace: str,
    *,
    name: str | None = None,
    type_: str | None = None,
    reason: str | None = None,
) -> list[dict[str, Any]]:
    """Events in a namespace, filtered by the involved object's name, the type and the reason."""
    args = ["get", "events", "-n", namespace, "-o", "json"]
    selector = _selector(**{"involvedObject.name": name, "type": type_, "reason": reason})
    if selector:
        args += ["--field-selector", selector]
    return list(json.loads(kubectl.run(*args).stdout)["items"])


def wait_for(what: str, probe: Callable[[], T | None], timeout: float = 60.0, interval: float = 0.25) -> T:
    """Polls until probe returns something truthy; fails with what it was waiting for."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")
