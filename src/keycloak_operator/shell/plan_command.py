"""`keycloak-operator plan NAME --image IMAGE`: the path the planner would take for that image, changing
nothing. Reads the Keycloak (for its policy and what its last upgrade measured), its canonical Deployment
(for the image running now) and, when the policy asks for Keycloak's compatibility check, that change's
check Job, whose answer the planner takes as the operator would; and that image's preflight, when one ran
(its Job and pod, or status.preflight): the version read from the image, the digest, or what failed. It
starts nothing: a preflight not run yet is said to be so."""

from __future__ import annotations

from pydantic import ValidationError

from keycloak_operator.core import compatibility_check, preflight, upgrade_plan, versions
from keycloak_operator.core.reconcile import owner_of
from keycloak_operator.core.rollout import image_of, version_of
from keycloak_operator.kernel import names
from keycloak_operator.models.keycloak import KeycloakSpec, KeycloakStatus
from keycloak_operator.shell.cli_target import CommandError, Target, connected, keycloak_named
from keycloak_operator.shell.kube import DEPLOYMENTS, JOBS
from keycloak_operator.shell.reconciler import preflight_answer, with_pod_defaults


class NotPlanned(CommandError):
    """The spec is not valid with the image asked for; the message says why."""


async def run(target: Target, name: str, image: str) -> upgrade_plan.Plan:
    namespace = target.namespace
    async with connected(target) as kube:
        keycloak = await keycloak_named(kube, target, name)
        try:
            spec = KeycloakSpec.model_validate({**(keycloak.get("spec") or {}), "image": image})
        except ValidationError as e:
            raise NotPlanned(f"the spec with image {image!r} is not valid: {e}") from e
        canonical = await kube.get(DEPLOYMENTS, namespace, names.deployment(name))
        # As the operator sees it: the version and the Jobs' names are of the spec with its defaults.
        spec, _ = with_pod_defaults(spec, keycloak, canonical)
        check = compatibility_check.Answer()
        if canonical is not None and compatibility_check.wanted(spec, image_of(canonical)):
            job = compatibility_check.job_name(
                name, version_of(canonical), versions.version_of(spec).format()
            )
            found = await kube.get(JOBS, namespace, job)
            check = compatibility_check.answer(job, found, owner_of(keycloak))
        version = versions.version_of(spec).format()
        proved = await preflight_answer(kube, keycloak, spec, canonical, version)
    if canonical is None:
        plan = upgrade_plan.first_creation()
        print(upgrade_plan.summary(plan, "", image, proved=preflight.for_plan(proved)))
        return plan
    running = image_of(canonical)
    verified = proved.version if proved.state == "passed" else ""
    plan = upgrade_plan.for_deployment(spec, name, canonical, check.exit, verified)
    status = KeycloakStatus.model_validate(keycloak.get("status") or {})
    last = status.upgrade_plan
    window = status.blue_green.write_window_seconds if status.blue_green else None
    print(
        upgrade_plan.summary(
            plan,
            running,
            image,
            check=compatibility_check.for_plan(spec, running, check),
            proved=preflight.for_plan(proved),
            last=upgrade_plan.measured(
                plan.path, last.path if last else "", last.downtime_seconds if last else None, window
            ),
        )
    )
    return plan
