"""Keycloak's admin REST API, one module per area over one connection (connection.py): what the writers
call. Nothing here imports a writer (an import contract in pyproject.toml holds it).
"""
