"""`python hack/operator_keycloak_env.py VERSION`: the operator's literal Keycloak variables, one
`NAME=value` a line, for `build-keycloak-image.sh --optimized` to hand to `kc.sh build`.

Here, not in localcluster: the harness builds the cluster from the kernel and the models only, and this is the
operator's own rendering (docs/architecture.md).
"""

from __future__ import annotations

import sys

from keycloak_operator.core import children
from keycloak_operator.core.deployment import render_deployment
from keycloak_operator.kernel import names
from keycloak_operator.models.keycloak import KeycloakSpec
from localcluster import app_images, real_keycloak


def operator_keycloak_env(version: str) -> list[str]:
    """`NAME=value` for every KC_ variable with a literal value in the Keycloak container of the Deployment
    the operator renders (core.deployment.render_deployment) for a Keycloak `version` on the real node
    (real_keycloak.keycloak, cache isolation by revision). Variables from Secrets (the database's and the
    admin's credentials) are runtime options."""
    resource = real_keycloak.keycloak(
        "keycloak", "default", app_images.keycloak_image(version), cacheIsolation={"autoRevision": True}
    )
    spec = KeycloakSpec.model_validate(resource["spec"])
    owner = children.Owner(name="keycloak", namespace="default", uid="")
    rendered = render_deployment(owner, spec, image=spec.image, track=names.TRACKS[0], version=version)
    env = rendered["spec"]["template"]["spec"]["containers"][0]["env"]
    return [f"{e['name']}={e['value']}" for e in env if e["name"].startswith("KC_") and "value" in e]


if __name__ == "__main__":
    print("\n".join(operator_keycloak_env(sys.argv[1])))
