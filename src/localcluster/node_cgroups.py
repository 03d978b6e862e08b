"""The real node's own cgroup root (cgroup v1, the kubelet's cgroupfs driver).

The kubelet puts every pod under <cgroupRoot>/kubepods. With the default root ("/") that tree is shared by any
kubelet on the machine and outlives them all; with a root of the node's own it is created before the kubelet
starts and removed, empty, after it stops.
"""

from __future__ import annotations

import os
from pathlib import Path

CGROUP_FS = Path("/sys/fs/cgroup")


def hierarchies(fs: Path = CGROUP_FS) -> list[Path]:
    """Every mounted v1 hierarchy (cpu, memory, ..., the named systemd one): the kubelet uses them all."""
    if not fs.is_dir():
        return []
    return sorted(
        p for p in fs.iterdir() if p.is_dir() and not p.is_symlink() and (p / "cgroup.procs").exists()
    )


def create(name: str, fs: Path = CGROUP_FS) -> None:
    for hierarchy in hierarchies(fs):
        group = hierarchy / name
        group.mkdir(exist_ok=True)
        if hierarchy.name.startswith("cpuset"):
            # A new cpuset cgroup has no CPUs or memory nodes: nothing could join it until they are copied.
            for knob in ("cpuset.cpus", "cpuset.mems"):
                if not (group / knob).read_text().strip():
                    (group / knob).write_text((hierarchy / knob).read_text())


def remove(name: str, fs: Path = CGROUP_FS) -> list[Path]:
    """Removes the tree bottom-up; returns the groups still in use (a process left in them), if any."""
    busy = []
    for hierarchy in hierarchies(fs):
        root = hierarchy / name
        if not root.is_dir():
            continue
        # A cgroup directory is removed with rmdir even though it lists files: they are the kernel's knobs.
        for dirpath, _, _ in sorted(os.walk(root), key=lambda w: len(w[0]), reverse=True):
            try:
                os.rmdir(dirpath)
            except OSError:
                busy.append(Path(dirpath))
    return busy
