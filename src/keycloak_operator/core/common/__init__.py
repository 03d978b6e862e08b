"""The pure pieces both halves of the core share: status conditions, merge patches, and the replicas'
peering and stored formats. They import neither the Keycloak controller's core nor the replication core
(docs/architecture.md)."""
