"""The running cluster's record on disk: ports and the pid of each component, so any later process
(`make cluster-down`, the next test session) can find, check and stop exactly what was started."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

STATE_FILE = "state.json"


@dataclass
class Component:
    name: str
    pid: int
    executable: str
    log: str


@dataclass
class State:
    server: str
    etcd_url: str
    kubeconfig: str
    components: list[Component] = field(default_factory=list)

    def save(self, directory: Path) -> None:
        tmp = directory / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2))
        tmp.replace(directory / STATE_FILE)  # atomic: a reader never sees half a file


def load(directory: Path) -> State | None:
    try:
        raw = json.loads((directory / STATE_FILE).read_text())
        components = [Component(**c) for c in raw.pop("components")]
        return State(components=components, **raw)
    except (OSError, ValueError, TypeError, KeyError):
        return None
