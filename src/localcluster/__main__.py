"""`python -m localcluster up|down|status`: what `make cluster` and `make cluster-down` run."""

from __future__ import annotations

import argparse
import sys

import localcluster
from localcluster import control_plane, process, realnode, registry, versions
from localcluster.build import BuildError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m localcluster", description=__doc__)
    parser.add_argument("command", choices=["up", "down", "status"])
    args = parser.parse_args(argv)
    if args.command == "up":
        try:
            cluster = localcluster.ensure_running()
        except (control_plane.ComponentError, realnode.PreflightError, BuildError) as err:
            print(f"error: {err}", file=sys.stderr)  # already says which component and shows its log
            return 1
        print(f"server: {cluster.server}")
        served = registry.current(cluster.state_dir)
        if served is not None:
            print(f"registry: {served.host} (plain HTTP, pulled by the real node)")
        print(f"export KUBECONFIG={cluster.kubeconfig}")
        print(cluster.kubeconfig)  # last line: the kubeconfig path, for scripts
        return 0
    if args.command == "down":
        print("stopped" if control_plane.stop() else "no cluster was running")
        return 0
    rows = control_plane.status()
    if not rows:
        print("no cluster recorded")
        return 1
    for name, pid, alive in rows:
        print(f"{name:<24} pid {pid:<8} {'running' if alive else 'NOT RUNNING'}")
    recorded = registry.load(versions.cluster_dir() / registry.NAME)
    if recorded is not None:
        pid = recorded.component.pid
        print(f"{'registry':<24} pid {pid:<8} {'running' if process.alive(pid) else 'NOT RUNNING'}")
    running = control_plane.current()
    if running is None:
        print("apiserver: not ready")
        return 1
    print(f"apiserver: {running.server} ready")
    print(running.kubeconfig)
    return 0


if __name__ == "__main__":
    sys.exit(main())
