"""Realm and client replication, one round per Keycloak server: `round.py` orders it; each kind has a writer
here (realms.py, roles.py, clients.py) and a planner in core/replication/."""

from keycloak_operator.shell.replication.round import Replicator

__all__ = ["Replicator"]
