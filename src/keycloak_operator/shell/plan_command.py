"""`keycloak-operator plan NAME --image IMAGE`: the path the planner would take for that image, changing
nothing. Reads the Keycloak (for its policy) and its canonical Deployment (for the image running now)."""

from __future__ import annotations

from pydantic import ValidationError

from keycloak_operator.core import names, upgrade_plan
from keycloak_operator.core.rollout import image_of
from keycloak_operator.models.keycloak import KeycloakSpec
from keycloak_operator.shell.kube import DEPLOYMENTS, KEYCLOAKS, Kube


class NotPlanned(Exception):
    """No plan can be made (no such Keycloak, an invalid spec); the message says why."""


async def run(namespace: str, name: str, image: str) -> upgrade_plan.Plan:
    kube = await Kube.connect()
    try:
        keycloak = await kube.get(KEYCLOAKS, namespace, name)
        if keycloak is None:
            raise NotPlanned(f"Keycloak {namespace}/{name} not found")
        try:
            spec = KeycloakSpec.model_validate({**(keycloak.get("spec") or {}), "image": image})
        except ValidationError as e:
            raise NotPlanned(f"the spec with image {image!r} is not valid: {e}") from e
        canonical = await kube.get(DEPLOYMENTS, namespace, names.deployment(name))
    finally:
        await kube.close()
    running = image_of(canonical) if canonical is not None else ""
    plan = upgrade_plan.for_spec(spec, running) if running else upgrade_plan.first_creation()
    print(upgrade_plan.summary(plan, running, image))
    return plan
