"""Curation persistence: sources, episodes, entities, claims, evidence, outbox (later issues)."""
