"""Curation: sources, connectors, episodes, claims, entities, trust tiers, outbox, graph."""
