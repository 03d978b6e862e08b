"""`keycloak-operator rollback NAME`: put the last good spec back; the normal reconcile rolls it out."""

from __future__ import annotations

from keycloak_operator.core import rollback
from keycloak_operator.core.reconcile import stored_status
from keycloak_operator.shell.cli_target import Target, connected, keycloak_named
from keycloak_operator.shell.kube import CONTROLLER_REVISIONS, KEYCLOAKS


async def run(target: Target, name: str) -> str:
    namespace = target.namespace
    async with connected(target) as kube:
        keycloak = await keycloak_named(kube, target, name)
        plan = rollback.plan(keycloak)
        revision = await kube.get(CONTROLLER_REVISIONS, namespace, plan.revision_name)
        if revision is None:
            raise rollback.RollbackRefused(
                f"the spec of {plan.target} (ControllerRevision {plan.revision_name}) is gone: cannot restore"
            )
        keycloak["spec"] = rollback.restored_spec(keycloak, revision)
        # PUT with the resourceVersion just read: a concurrent edit makes this fail instead of being lost.
        await kube.replace(KEYCLOAKS, namespace, name, keycloak)
        slots = stored_status(keycloak).versions
        was = slots.next_version or slots.current_version
        return (
            f"Keycloak {namespace}/{name}: restored the spec of {plan.target} (replacing {was}); rolling out"
        )
