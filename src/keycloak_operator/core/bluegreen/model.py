"""The blue-green machine's vocabulary: states, what the shell observed, actions, and one step's result."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, Literal, NamedTuple

from keycloak_operator.models.upgrade_status import BlueGreenStatus

# --- states -------------------------------------------------------------------------------------------------

IDLE: Final = "Idle"
BACKING_UP: Final = "BackingUp"
COPYING_DATABASE: Final = "CopyingDatabase"
PROVISIONING_GREEN: Final = "ProvisioningGreen"
WAITING_FOR_GREEN: Final = "WaitingForGreen"
CUTTING_OVER: Final = "CuttingOver"
DRAINING: Final = "Draining"
TEARING_DOWN_BLUE: Final = "TearingDownBlue"
PROMOTING: Final = "Promoting"
COMPLETED: Final = "Completed"
ROLLING_BACK: Final = "RollingBack"
CANCELLING: Final = "Cancelling"
FAILED: Final = "Failed"

STATES: Final = (
    IDLE,
    BACKING_UP,
    COPYING_DATABASE,
    PROVISIONING_GREEN,
    WAITING_FOR_GREEN,
    CUTTING_OVER,
    DRAINING,
    TEARING_DOWN_BLUE,
    PROMOTING,
    COMPLETED,
    ROLLING_BACK,
    CANCELLING,
    FAILED,
)
AT_REST: Final = frozenset({IDLE, COMPLETED, FAILED})
# Traffic has not left blue yet: a spec change may still cancel or replace the green in flight.
BEFORE_CUTOVER: Final = frozenset({BACKING_UP, COPYING_DATABASE, PROVISIONING_GREEN, WAITING_FOR_GREEN})
# Public traffic goes (or is being switched) to green.
ON_GREEN: Final = frozenset({CUTTING_OVER, DRAINING, TEARING_DOWN_BLUE, PROMOTING, COMPLETED})

Tier = Literal["cnpg", "managed", "external"]
BackupPhase = Literal["pending", "completed", "failed"]
CopyPhase = Literal["pending", "completed", "failed"]
EventType = Literal["Normal", "Warning"]

# --- what the shell observed --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Observed:
    """The world as the shell read it for one Keycloak, right before calling `step`.

    `blue` is the canonical Deployment `{name}-keycloak`, `green` is `{name}-green-keycloak` (both as the API
    server returned them, metadata.uid and deletionTimestamp included), or None when absent.
    """

    name: str
    spec_image: str
    strategy: Literal["Recreate", "BlueGreen"] = "BlueGreen"
    auto_teardown: bool = True
    green_ready_timeout_s: float = 900.0
    backup_timeout_s: float = 600.0
    drain_delay_s: float = 10.0
    replicas: int = 1
    tier: Tier = "cnpg"
    managed_pvc: bool = False  # managed tier only: a PVC to snapshot is configured
    blue: dict[str, Any] | None = None
    green: dict[str, Any] | None = None
    public_selector_track: str | None = None
    backup_phase: BackupPhase | None = None  # None: no backup object of the recorded name exists
    green_discovery_exists: bool = False
    # Green pods that green's discovery EndpointSlices list as serving (ready, not terminating): the
    # EndpointSlice controller's own view of green, the one it will use to fill the public Service's slices
    # after the switch. Read only while waiting for green or cutting over; None when not read.
    green_serving_endpoints: int | None = None
    # The upgrade planner's path from blue's image to the spec's (core/upgrade_plan.py); the machine starts,
    # or replaces its green, only for BlueGreenShared and BlueGreenCopy. None: not planned (no blue).
    upgrade_path: str | None = None
    # The database blue's (canonical) pods use, and the spec's database name a copy is named after
    # (core/database_copy.py; on cnpg both are Clusters); the copy's outcome while copying (None: no Job, or
    # on cnpg no Cluster, of the recorded name).
    database: str = ""
    spec_database: str = ""
    copy_timeout_s: float = 600.0
    copy_phase: CopyPhase | None = None

    @property
    def backup_possible(self) -> bool:
        return self.tier == "cnpg" or (self.tier == "managed" and self.managed_pvc)


# --- actions: every one is idempotent, so a resumed step may repeat it safely ------------------------------


@dataclass(frozen=True)
class CreateBackup:
    """Create the CNPG Backup (cnpg) or VolumeSnapshot (managed) named `name`; an existing one is kept.
    cnpg: the Backup is of `database`, the Cluster blue runs on (a copy once a copy was promoted)."""

    name: str
    tier: Tier
    database: str = ""


@dataclass(frozen=True)
class CopyDatabase:
    """Create the Job `job` that fills database `target` from `source`; an existing Job is kept. On the cnpg
    tier, create the Cluster `target` (== `job`) recovered from Backup `backup`, shaped like the Cluster
    `source`; an existing Cluster is kept."""

    job: str
    source: str
    target: str
    backup: str = ""
    tier: Tier = "managed"


@dataclass(frozen=True)
class ApplyGreen:
    """Server-side apply green's track's membership Service `{name}-discovery-<track>` (what its pods query,
    ADR 0018), then `{name}-green-keycloak` with its pods on `database` (empty: the canonical Deployment's),
    and `{name}-green-discovery` (how the machine sees it serve)."""

    image: str
    track: str
    database: str = ""
    apart: bool = False  # green's membership Service selects green's track only (discovery.tracks_apart)


@dataclass(frozen=True)
class DeleteGreen:
    """Delete `{name}-green-keycloak` (and its pods); absent is fine."""


@dataclass(frozen=True)
class SwitchTraffic:
    """Set the public Service's selector to this track in one apply (creating the Service if missing)."""

    track: str


@dataclass(frozen=True)
class DeleteBlue:
    """Delete the canonical Deployment with a uid precondition; its discovery Service stays (re-pointed)."""

    uid: str


@dataclass(frozen=True)
class OrphanGreen:
    """Delete `{name}-green-keycloak` with propagationPolicy Orphan and a uid precondition: pods stay."""

    uid: str


@dataclass(frozen=True)
class AdoptAsCanonical:
    """Apply the canonical Deployment with green's exact pod template; it adopts the orphaned ReplicaSet."""

    image: str
    track: str
    database: str = ""


@dataclass(frozen=True)
class DeleteGreenDiscovery:
    """Delete `{name}-green-discovery` (the machine's view of green; no pod queries it); absent is fine."""


Action = (
    CreateBackup
    | CopyDatabase
    | ApplyGreen
    | DeleteGreen
    | SwitchTraffic
    | DeleteBlue
    | OrphanGreen
    | AdoptAsCanonical
    | DeleteGreenDiscovery
)


class Event(NamedTuple):
    type: EventType
    reason: str
    message: str


@dataclass(frozen=True)
class Step:
    """One call's result. The shell persists `status` first, then performs `actions` in order.

    requeue_after: 0.0 = call again now (the state moved, the next one may already be satisfied); a positive
    number = call again after that many seconds unless a child event comes first; None = at rest.
    """

    status: BlueGreenStatus | None
    actions: list[Action] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    requeue_after: float | None = None
