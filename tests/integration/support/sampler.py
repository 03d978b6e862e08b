"""Samples a namespace's pods and EndpointSlices every 100 ms straight from the API server.

Downtime is measured, not inferred: each sample records, for every Service, which endpoint addresses its
EndpointSlices list as ready, and for every pod its IP, image, labels and readiness. Assertions run on the
samples afterwards.
"""

from __future__ import annotations

import itertools
import ssl
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

SERVICE_LABEL = "kubernetes.io/service-name"


@dataclass(frozen=True)
class Pod:
    name: str
    ip: str
    image: str
    ready: bool
    terminating: bool
    labels: dict[str, str]


@dataclass(frozen=True)
class Sample:
    at: float
    ready_addresses: dict[str, frozenset[str]]  # service -> ready endpoint IPs
    all_addresses: dict[str, frozenset[str]]  # service -> every endpoint IP (ready or not)
    pods: dict[str, Pod]  # by IP


@dataclass
class Sampler:
    server: str
    ca: Path
    cert: Path
    key: Path
    namespace: str
    interval: float = 0.1
    samples: list[Sample] = field(default_factory=list)
    errors: int = 0
    last_error: str = ""

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        ns = self.namespace
        tls = ssl.create_default_context(cafile=str(self.ca))
        tls.load_cert_chain(str(self.cert), str(self.key))
        with httpx.Client(base_url=self.server, verify=tls) as http:
            while not self._stop.is_set():
                started = time.monotonic()
                try:
                    slices = http.get(f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices")
                    pods = http.get(f"/api/v1/namespaces/{ns}/pods")
                    slices.raise_for_status()
                    pods.raise_for_status()
                    self.samples.append(self._sample(started, slices.json()["items"], pods.json()["items"]))
                except (httpx.HTTPError, KeyError) as e:
                    self.errors += 1
                    self.last_error = repr(e)
                self._stop.wait(max(0.0, self.interval - (time.monotonic() - started)))

    @staticmethod
    def _sample(at: float, slices: list[dict], pods: list[dict]) -> Sample:
        ready: dict[str, set[str]] = {}
        every: dict[str, set[str]] = {}
        for s in slices:
            service = s["metadata"].get("labels", {}).get(SERVICE_LABEL, "")
            for endpoint in s.get("endpoints") or []:
                for address in endpoint.get("addresses", []):
                    every.setdefault(service, set()).add(address)
                    if endpoint.get("conditions", {}).get("ready"):
                        ready.setdefault(service, set()).add(address)
        by_ip = {}
        for p in pods:
            ip = p.get("status", {}).get("podIP")
            if not ip:
                continue
            conditions = p["status"].get("conditions", [])
            by_ip[ip] = Pod(
                name=p["metadata"]["name"],
                ip=ip,
                image=p["spec"]["containers"][0]["image"],
                ready=any(c["type"] == "Ready" and c["status"] == "True" for c in conditions),
                terminating=bool(p["metadata"].get("deletionTimestamp")),
                labels=p["metadata"].get("labels", {}),
            )
        return Sample(
            at=at,
            ready_addresses={k: frozenset(v) for k, v in ready.items()},
            all_addresses={k: frozenset(v) for k, v in every.items()},
            pods=by_ip,
        )

    def max_gap(self) -> float:
        """The longest interval between two samples: proof the sampling really ran at the rate claimed."""
        times = [s.at for s in self.samples]
        return max((b - a for a, b in itertools.pairwise(times)), default=float("inf"))


def for_cluster(cluster, namespace: str) -> Sampler:  # type: ignore[no-untyped-def]
    pki = cluster.state_dir / "pki"
    return Sampler(cluster.server, pki / "ca.crt", pki / "admin.crt", pki / "admin.key", namespace)
