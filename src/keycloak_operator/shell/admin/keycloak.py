"""The Keycloak admin REST API as a writer holds it for one login: the connection (admin/connection.py: its
deadlines, size caps, write count and errors) with the calls of the areas most writers use, realms and their
roles (admin/realm.py), clients (admin/client.py) and client scopes (admin/client_scope.py). Every area of
the API is a class `<Area>Admin` in shell/admin/<area>.py; those only some writers use (groups, identity
providers, authentication flows, role mappings) wrap the connection instead: `GroupAdmin(admin)`."""

from __future__ import annotations

from keycloak_operator.shell.admin.client import ClientAdmin
from keycloak_operator.shell.admin.client_scope import ClientScopeAdmin
from keycloak_operator.shell.admin.realm import RealmAdmin


class KeycloakAdmin(RealmAdmin, ClientAdmin, ClientScopeAdmin):
    """One admin login's connection, with the calls of its realms, roles, clients and client scopes."""
