"""Records every state a namespace's pods and EndpointSlices go through, from watches on the API server.

Downtime is measured, not inferred: a sample records, for every Service, which endpoint addresses its
EndpointSlices list as ready, and for every pod its IP, image, labels and readiness. A sample is taken after
every watch event and, between events, every `interval` seconds (the state unchanged, the time moving on).

Watches, not polling: polling every 100 ms only proves something about the moments it sampled, and on a
loaded machine (CPU stolen by the hypervisor, the API server slow to answer) it went 0.65 to 1.6 s without a
sample, a window in which downtime would go unseen. A watch delivers every change in order however late it
is read, so no state the API server exposed (the one kube-proxy acts on) is missed; `complete()` says the
watches ran without a break. Assertions run on the samples afterwards.
"""

from __future__ import annotations

import json
import queue
import ssl
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

SERVICE_LABEL = "kubernetes.io/service-name"
SLICES = "/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices"
PODS = "/api/v1/namespaces/{ns}/pods"
WATCH_SECONDS = 2  # the server ends each watch stream after this; the next resumes where it ended


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
    interval: float = 0.1  # between events: how often the unchanged state is sampled again
    samples: list[Sample] = field(default_factory=list)
    errors: int = 0
    last_error: str = ""
    resumed: int = 0  # watches resumed after a broken stream (no event lost)
    last_resume: str = ""

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._events: queue.Queue[tuple[str, dict[str, Any]]] = queue.Queue()
        self._state: dict[str, dict[str, dict[str, Any]]] = {"slices": {}, "pods": {}}
        self._threads: list[threading.Thread] = []

    def _tls(self) -> ssl.SSLContext:
        tls = ssl.create_default_context(cafile=str(self.ca))
        tls.load_cert_chain(str(self.cert), str(self.key))
        return tls

    def __enter__(self) -> Sampler:
        versions = {}
        with httpx.Client(base_url=self.server, verify=self._tls()) as http:
            for kind, path in (("slices", SLICES), ("pods", PODS)):
                listed = http.get(path.format(ns=self.namespace))
                listed.raise_for_status()
                body = listed.json()
                self._state[kind] = {i["metadata"]["name"]: i for i in body["items"]}
                versions[kind] = body["metadata"]["resourceVersion"]
        self._take_sample()
        for kind, path in (("slices", SLICES), ("pods", PODS)):
            watch = threading.Thread(
                target=self._watch, args=(kind, path.format(ns=self.namespace), versions[kind]), daemon=True
            )
            self._threads.append(watch)
        self._threads.append(threading.Thread(target=self._record, daemon=True))
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *_: object) -> None:
        # Each watch ends within WATCH_SECONDS and its thread closes its own connection. Closing it from here
        # instead left a thread blocked in recv() on a freed descriptor, which the next pipe reused: it stole
        # the start of a kubectl's output (a JSONDecodeError in an unrelated test) and read garbage as TLS.
        self._stop.set()
        for t in self._threads:
            t.join(timeout=WATCH_SECONDS + 30)
            assert not t.is_alive(), "a sampler thread did not stop"

    def complete(self) -> bool:
        """Both watches ran from the first sample to the last without a break: no state was missed."""
        return self.errors == 0 and len(self.samples) > 1

    def _watch(self, kind: str, path: str, version: str) -> None:
        """Follows one kind from `version` on, in streams the server ends every WATCH_SECONDS (so the thread
        sees a stop in time), each resumed from the last version seen: nothing is lost. A broken stream is
        resumed the same way; only a version the server no longer has (410 Gone) would lose events, and
        that is counted as an error, never papered over."""
        timeout = httpx.Timeout(10, read=WATCH_SECONDS + 10)
        with httpx.Client(base_url=self.server, verify=self._tls(), timeout=timeout) as client:
            while not self._stop.is_set():
                params = {
                    "watch": "1",
                    "resourceVersion": version,
                    "allowWatchBookmarks": "true",
                    "timeoutSeconds": str(WATCH_SECONDS),
                }
                try:
                    with client.stream("GET", path, params=params) as stream:
                        if stream.status_code == 410:
                            raise Gone(f"{kind} watch: version {version} is gone")
                        stream.raise_for_status()
                        for line in stream.iter_lines():
                            if not line:
                                continue
                            event = json.loads(line)
                            if event["type"] == "ERROR":
                                raise Gone(f"{kind} watch: {event['object'].get('message')}")
                            version = event["object"]["metadata"]["resourceVersion"]
                            if event["type"] != "BOOKMARK":
                                self._events.put((kind, event))
                except Gone as e:
                    self.errors += 1
                    self.last_error = str(e)
                    return
                except Exception as e:  # a broken stream: resumed from `version`, nothing is lost
                    self.resumed += 1
                    self.last_resume = f"{kind}: {e!r}"
                    self._stop.wait(0.1)

    def _record(self) -> None:
        while not self._stop.is_set():
            try:
                kind, event = self._events.get(timeout=self.interval)
            except queue.Empty:
                self._take_sample()  # nothing changed: the same state, later
                continue
            items = self._state[kind]
            name = event["object"]["metadata"]["name"]
            if event["type"] == "DELETED":
                items.pop(name, None)
            else:
                items[name] = event["object"]
            self._take_sample()

    def _take_sample(self) -> None:
        self.samples.append(
            self._sample(
                time.monotonic(), list(self._state["slices"].values()), list(self._state["pods"].values())
            )
        )

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


class Gone(Exception):
    """The watch cannot resume where it stopped: events were lost."""


def for_cluster(cluster, namespace: str) -> Sampler:  # type: ignore[no-untyped-def]
    pki = cluster.state_dir / "pki"
    return Sampler(cluster.server, pki / "ca.crt", pki / "admin.crt", pki / "admin.key", namespace)
