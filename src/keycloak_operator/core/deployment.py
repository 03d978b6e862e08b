"""The Deployment the operator renders for a Keycloak: canonical and green alike.

Pure. `core/children.deployment` with what the rest of the core knows about the pods: the cache cluster
the image honours, the database (a copy's, during a blue-green upgrade on one), the digest the image's
preflight resolved, and `--optimized` when the image was built with the pods' build options.
"""

from __future__ import annotations

from typing import Any

from keycloak_operator.core import children, database_copy, durations, optimized, preflight_gate
from keycloak_operator.core.cache_cluster import resolve_cache_cluster
from keycloak_operator.kernel import names
from keycloak_operator.models.keycloak import KeycloakSpec
from keycloak_operator.models.upgrade_status import PreflightStatus


def admin_secret_name(owner: children.Owner, spec: KeycloakSpec) -> str:
    return spec.admin_secret.name if spec.admin_secret is not None else names.admin_secret(owner.name)


def render_deployment(
    owner: children.Owner,
    spec: KeycloakSpec,
    *,
    image: str,
    track: str,
    version: str,
    green: bool = False,
    recreate: bool = False,
    database: str = "",
    proof: PreflightStatus | None = None,
) -> dict[str, Any]:
    """The Deployment for `spec` running `image` on `track` (on `database`, empty: the spec's); green and
    canonical share one pod template. `proof`: what the image's preflight found (it pins the digest, and
    starts the pods `--optimized` when the image was built with their build options: core/optimized.py)."""
    verified = preflight_gate.verified_version(proof, image)
    cache = resolve_cache_cluster(owner.name, spec.cache_isolation, image, verified)
    spec = database_copy.with_database(spec, database)
    rendered = children.deployment(
        children.WorkloadInputs(
            owner=owner,
            spec=spec.model_copy(update={"image": image}),
            track=track,
            cache_cluster=cache.name,
            admin_secret=admin_secret_name(owner, spec),
            version=version,
            green=green,
            recreate=recreate,
            progress_deadline_seconds=max(1, int(durations.parse(spec.upgrade_policy.rollout_timeout))),
        )
    )
    found = optimized.verdict(proof, image, rendered["spec"]["template"]["spec"])
    return optimized.apply(preflight_gate.pin(rendered, proof, image), found)
