"""The Keycloak admin REST API as a writer holds it for one login: the connection (admin_connection.py: its
deadlines, size caps, write count and errors) with the calls of the areas most writers use, realms and their
roles (realm_admin.py), clients (client_admin.py) and client scopes (client_scope_admin.py). Every area of
the API is a class `<Area>Admin` in shell/<area>_admin.py; those only some writers use (groups, identity
providers, authentication flows, role mappings) wrap the connection instead: `GroupAdmin(admin)`."""

from __future__ import annotations

from keycloak_operator.shell.client_admin import ClientAdmin
from keycloak_operator.shell.client_scope_admin import ClientScopeAdmin
from keycloak_operator.shell.realm_admin import RealmAdmin


class KeycloakAdmin(RealmAdmin, ClientAdmin, ClientScopeAdmin):
    """One admin login's connection, with the calls of its realms, roles, clients and client scopes."""
