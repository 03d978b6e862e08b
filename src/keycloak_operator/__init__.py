"""A Kubernetes operator for Keycloak: clusters, blue-green upgrades, realm and client replication."""
