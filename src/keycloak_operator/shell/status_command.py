"""`keycloak-operator status NAME [--watch]`: the upgrade's progress as rich tables, refreshed in place."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from keycloak_operator.core.progress import Progress, deployments_of, duration, progress
from keycloak_operator.shell.cli_target import Target, connected, keycloak_named
from keycloak_operator.shell.kube import DEPLOYMENTS, EVENTS, Kube

REFRESH_SECONDS = 2.0


def render(p: Progress) -> Group:
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    head.add_row("Keycloak", f"{p.namespace}/{p.name}  phase {p.phase}")
    head.add_row("image", p.image)
    head.add_row("versions", f"next {p.next_version or '-'}")
    head.add_row("", f"current {p.current_version or '-'}")
    head.add_row("", f"last {p.last_version or '-'}")
    upgrade = f"{p.state}, for {duration(p.in_state_seconds)}"
    if p.deadline_in_seconds is not None:
        upgrade += f" (deadline in {duration(p.deadline_in_seconds)})"
    head.add_row("plan", p.plan or "-")
    if p.database:
        head.add_row("database", p.database)
    head.add_row("upgrade", upgrade)
    head.add_row("waiting for", p.waiting_for)
    if p.message:
        head.add_row("", p.message)

    tracks = Table(title="Deployments", title_justify="left")
    for column in ("track", "deployment", "image", "ready"):
        tracks.add_column(column)
    for t in p.tracks:
        tracks.add_row(t.role, t.deployment, t.image, f"{t.ready}/{t.desired}")

    events = Table(title="Last events", title_justify="left")
    for column in ("age", "type", "reason", "message"):
        events.add_column(column)
    for e in p.events:
        style = "yellow" if e.type == "Warning" else ""
        events.add_row(duration(e.age_seconds), Text(e.type, style=style), e.reason, e.message)
    return Group(head, tracks, events)


async def snapshot(kube: Kube, target: Target, name: str) -> Progress:
    namespace = target.namespace
    keycloak = await keycloak_named(kube, target, name)
    blue_name, green_name = deployments_of(name)
    uid = keycloak["metadata"]["uid"]
    return progress(
        keycloak,
        await kube.get(DEPLOYMENTS, namespace, blue_name),
        await kube.get(DEPLOYMENTS, namespace, green_name),
        await kube.list(EVENTS, namespace, field_selector=f"involvedObject.uid={uid}"),
        datetime.now(UTC),
    )


async def run(target: Target, name: str, watch: bool, console: Console | None = None) -> None:
    console = console or Console()
    async with connected(target) as kube:
        if not watch:
            console.print(render(await snapshot(kube, target, name)))
            return
        with Live(render(await snapshot(kube, target, name)), console=console, auto_refresh=False) as live:
            while True:
                await asyncio.sleep(REFRESH_SECONDS)
                live.update(render(await snapshot(kube, target, name)), refresh=True)
