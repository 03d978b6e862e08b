"""Which pod answered each connection to a ClusterIP: kube-proxy's rewrite, read back from the kernel.

A request to a Service's ClusterIP leaves from a local port; kube-proxy's DNAT rule sends it to one pod, and
the kernel's connection tracking records that pod as the source of the replies. Listing the Service's
connections (`conntrack -L`, filtered by address and port) every half second finds each one while it
lingers (two minutes in TIME_WAIT, ten seconds after a reset), so attributing every request costs one
process per half second, not one per request.
"""

from __future__ import annotations

import re
import subprocess
import threading
import time
from dataclasses import dataclass, field

# orig: src=<us> dst=<ClusterIP> sport=<local port> dport=<port>, then reply: src=<pod> dst=... (ports)
_TUPLE = re.compile(r"src=(\S+) dst=(\S+) sport=(\d+) dport=(\d+)")


def parse(listing: str) -> list[tuple[int, str]]:
    """(local port, address that answered) for every TCP connection in a `conntrack -L` listing."""
    found = []
    for line in listing.splitlines():
        tuples = _TUPLE.findall(line)
        if len(tuples) >= 2:
            (_, _, sport, _), (reply_src, _, _, _) = tuples[0], tuples[1]
            found.append((int(sport), reply_src))
    return found


@dataclass
class Routes:
    service_ip: str
    port: int
    interval: float = 0.5
    seen: dict[tuple[int, str], float] = field(default_factory=dict)  # -> when first listed (monotonic)
    errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="routes", daemon=True)

    def start(self) -> Routes:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=15)
        self.poll()  # the last requests' connections too

    def _run(self) -> None:
        while not self._stop.is_set():
            self.poll()
            self._stop.wait(self.interval)

    def poll(self) -> None:
        argv = ["conntrack", "-L", "-p", "tcp", "--orig-dst", self.service_ip]
        argv += ["--orig-port-dst", str(self.port)]
        try:
            listing = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=True).stdout
        except (OSError, subprocess.SubprocessError) as e:
            self.errors.append(repr(e)[:200])
            return
        now = time.monotonic()
        with self._lock:
            for key in parse(listing):
                self.seen.setdefault(key, now)

    def served_by(self, local_port: int, sent_at: float) -> str:
        """The address that answered the connection from `local_port` opened at `sent_at` ("" if unknown;
        the ClusterIP itself when no pod did: kube-proxy rejects a Service without endpoints)."""
        with self._lock:
            listed = sorted((at, ip) for (port, ip), at in self.seen.items() if port == local_port)
        later = [(at, ip) for at, ip in listed if at >= sent_at]
        if later:
            return later[0][1]
        # The port was used before (a minute after it is freed) and conntrack kept the old entry, which the
        # new connection took over: same port, same pod, so its key was already seen.
        return listed[-1][1] if listed else ""
