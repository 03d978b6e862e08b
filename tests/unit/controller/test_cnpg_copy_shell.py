"""The shell's side of the cnpg copy (shell/upgrade.perform): what it reads and creates for each action."""

from __future__ import annotations

from typing import Any

from keycloak_operator.core import cnpg_copy
from keycloak_operator.core.bluegreen import model as bg
from keycloak_operator.shell import upgrade
from keycloak_operator.shell.kube import CNPG_CLUSTERS, Resource
from tests.unit.builders import BASE, spec

KEYCLOAK = {"metadata": {"name": "kc", "namespace": "ns", "uid": "u1", "generation": 1}, "spec": BASE}
COPY = cnpg_copy.copy_name("db", "quay.io/keycloak/keycloak:26.7.3", "2026-01-01T12:00:00Z")


class RecordingKube:
    """Answers gets from `objects`, records creates."""

    def __init__(self, objects: dict[tuple[Resource, str], dict[str, Any]]) -> None:
        self.objects, self.created, self.read = objects, list[dict[str, Any]](), list[str]()

    async def get(self, res: Resource, namespace: str | None, name: str) -> dict[str, Any] | None:
        self.read.append(f"{res.plural}/{name}")
        return self.objects.get((res, name))

    async def create(self, obj: dict[str, Any]) -> dict[str, Any] | None:
        self.created.append(obj)
        return obj


async def test_the_backup_is_of_the_cluster_blue_runs_on() -> None:
    kube = RecordingKube({})
    await upgrade.perform(kube, KEYCLOAK, spec(), bg.CreateBackup("kc-pre-1", "cnpg", COPY))
    await upgrade.perform(kube, KEYCLOAK, spec(), bg.CreateBackup("kc-pre-2", "cnpg", "db"))
    assert [b["spec"]["cluster"]["name"] for b in kube.created] == [COPY, "db"]


async def test_the_copy_is_shaped_like_the_source_cluster_it_reads() -> None:
    source = {"spec": {"instances": 3, "imageName": "pg:17", "storage": {"size": "9Gi"}}}
    kube = RecordingKube({(CNPG_CLUSTERS, "db"): source})
    action = bg.CopyDatabase(COPY, "db", COPY, "kc-pre-1", "cnpg")
    await upgrade.perform(kube, KEYCLOAK, spec(), action)
    assert kube.read == ["clusters/db"]
    (made,) = kube.created
    assert (made["kind"], made["metadata"]["name"]) == ("Cluster", COPY)
    assert made["spec"]["bootstrap"]["recovery"]["backup"] == {"name": "kc-pre-1"}
    assert (made["spec"]["instances"], made["spec"]["imageName"]) == (3, "pg:17")
