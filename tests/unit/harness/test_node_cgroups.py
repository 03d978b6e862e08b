"""The real node's own cgroup root, on a fake cgroup v1 tree (plain directories)."""

from __future__ import annotations

from pathlib import Path

from localcluster import node_cgroups


def _fake_fs(tmp_path: Path) -> Path:
    fs = tmp_path / "cgroup"
    for name in ("memory", "cpuset", "systemd"):
        (fs / name).mkdir(parents=True)
        (fs / name / "cgroup.procs").write_text("")
    (fs / "cpuset" / "cpuset.cpus").write_text("0-1\n")
    (fs / "cpuset" / "cpuset.mems").write_text("0\n")
    (fs / "cpu,cpuacct").symlink_to(fs / "memory")  # like the kernel's combined-name links
    (fs / "not-a-hierarchy").mkdir()
    return fs


def test_hierarchies_are_the_mounted_ones_without_links(tmp_path: Path) -> None:
    fs = _fake_fs(tmp_path)
    assert [p.name for p in node_cgroups.hierarchies(fs)] == ["cpuset", "memory", "systemd"]


def test_create_makes_the_root_everywhere_and_gives_cpuset_its_cpus(tmp_path: Path) -> None:
    fs = _fake_fs(tmp_path)
    # The kernel creates these knobs empty in a new cpuset cgroup; a plain mkdir does not, so fake it.
    (fs / "cpuset" / "kcop-node-1").mkdir()
    (fs / "cpuset" / "kcop-node-1" / "cpuset.cpus").write_text("")
    (fs / "cpuset" / "kcop-node-1" / "cpuset.mems").write_text("")
    node_cgroups.create("kcop-node-1", fs)
    assert all((h / "kcop-node-1").is_dir() for h in node_cgroups.hierarchies(fs))
    assert (fs / "cpuset" / "kcop-node-1" / "cpuset.cpus").read_text() == "0-1\n"
    assert (fs / "cpuset" / "kcop-node-1" / "cpuset.mems").read_text() == "0\n"


def test_remove_takes_the_tree_bottom_up_and_reports_what_is_busy(tmp_path: Path) -> None:
    fs = _fake_fs(tmp_path)
    (fs / "memory" / "kcop-node-1" / "kubepods" / "besteffort").mkdir(parents=True)
    (fs / "systemd" / "kcop-node-1" / "kubepods").mkdir(parents=True)
    (fs / "systemd" / "kcop-node-1" / "kubepods" / "stray").write_text("")  # stands in for a live process
    busy = node_cgroups.remove("kcop-node-1", fs)
    assert not (fs / "memory" / "kcop-node-1").exists()
    assert busy == [fs / "systemd" / "kcop-node-1" / "kubepods", fs / "systemd" / "kcop-node-1"]
    assert node_cgroups.remove("absent", fs) == []
