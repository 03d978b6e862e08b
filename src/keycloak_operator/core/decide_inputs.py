"""What `reconcile.decide` works from: what the shell observed, and the facts of the pass derived from it.

Pure. `Observed` is what the shell read for one Keycloak; `Facts` is what decide derives from it once,
before any of its parts (core/decide_upgrade.py, core/decide_children.py, core/decide_status.py) decides.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from keycloak_operator.core import children, compatibility_check, preflight
from keycloak_operator.core.cache_cluster import CacheClusterResolution
from keycloak_operator.models.keycloak import KeycloakSpec, KeycloakStatus
from keycloak_operator.models.upgrade_status import BlueGreenStatus, DatabaseStatus, PreflightStatus


@dataclass(frozen=True)
class Observed:
    """What the shell read for one Keycloak. `keycloak` is the stored object, status included."""

    keycloak: dict[str, Any]
    deployment: dict[str, Any] | None
    public_service: dict[str, Any] | None
    existing_secrets: frozenset[str]
    version: str = ""
    green: dict[str, Any] | None = None  # `{name}-green-keycloak`, read only when blue-green is in use
    green_discovery_service: dict[str, Any] | None = None  # `{name}-green-discovery`, likewise
    # The per-track membership Services that exist (`{name}-discovery-<track>`, read by name), and the
    # colour-named `{name}-discovery` that pods rendered before ADR 0018 query.
    membership_services: tuple[dict[str, Any], ...] = ()
    discovery_service: dict[str, Any] | None = None
    pod_disruption_budget: dict[str, Any] | None = None
    ingress: dict[str, Any] | None = None
    http_route: dict[str, Any] | None = None  # `{name}-keycloak`, read whether wanted or not
    service_monitor: dict[str, Any] | None = None
    operator_login: dict[str, Any] | None = None  # `{name}-operator-login`, whoever's
    network_policies: tuple[dict[str, Any], ...] = ()  # those that exist under its names, whoever's
    existing_config_maps: frozenset[str] = frozenset()  # of those the spec references
    # The compatibility check for the image change at hand, when one is wanted (core/compatibility_check).
    compatibility: compatibility_check.Answer = field(default_factory=compatibility_check.Answer)
    # The preflight of the image change at hand (core/preflight): what its Job and pod say.
    preflight: preflight.Answer = field(default_factory=preflight.Answer)
    # Facts about the cluster and the operator, observed by the shell: whether the cluster serves the
    # ServiceMonitor and HTTPRoute kinds (each asked only when one is wanted), and the namespace the
    # operator runs in (None outside a cluster).
    service_monitor_served: bool = False
    http_route_served: bool = False
    operator_namespace: str | None = None
    # The profile the shell filled the spec's defaults from (core/pod_defaults.py), recorded in status; None:
    # not known here, the recorded one stays.
    pod_defaults: str | None = None


@dataclass(frozen=True)
class Facts:
    """One pass's facts, derived once by `reconcile.decide` and read by each of its parts."""

    spec: KeycloakSpec  # within what the installation lets spec.service ask for (core/service_policy)
    observed: Observed  # with another owner's objects taken out, as if nothing stood under their names
    owner: children.Owner
    generation: int
    previous: KeycloakStatus  # the stored status
    proof: PreflightStatus | None  # status.preflight as this pass records it (core/preflight_gate.record)
    blue_green: BlueGreenStatus | None  # the upgrade machine's status after this pass's step
    in_flight: bool  # a blue-green upgrade is under way
    kept: bool  # blue is kept after an upgrade: green serves
    image: str  # the image the canonical Deployment serves
    track: str  # the canonical Deployment's track
    database: DatabaseStatus  # the database the canonical Deployment's pods use
    cache: CacheClusterResolution  # the cache cluster of the pods running `image`
    blue_frozen: bool  # blue serves an image the spec no longer names: it stays as it was rolled out

    @property
    def canonical(self) -> dict[str, Any] | None:
        return self.observed.deployment

    @property
    def serving(self) -> dict[str, Any] | None:
        """The Deployment whose pods serve: green while blue is kept, else the canonical one."""
        return self.observed.green if self.kept else self.observed.deployment
