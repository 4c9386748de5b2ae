"""The composition root: the one place that reads settings and builds adapters.

Built objects are cached per process and dropped when a test overrides a setting.
"""

from __future__ import annotations

import contextlib
import functools
from typing import Any

import redis
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.dispatch import receiver

from curation.ports import GraphProjection

GRAPH_BACKENDS = ("falkordb", "neo4j")


@functools.cache
def graph() -> GraphProjection:
    """The configured graph projection (VERA_MEMORY__GRAPH_BACKEND)."""
    backend = settings.VERA_MEMORY__GRAPH_BACKEND
    if backend == "falkordb":
        from curation.adapters.falkordb import FalkorDBGraphProjection

        return FalkorDBGraphProjection(
            url=settings.VERA_MEMORY__FALKORDB_URL, graph_name=settings.VERA_MEMORY__GRAPH_NAME
        )
    if backend == "neo4j":
        from curation.adapters.neo4j import Neo4jGraphProjection

        if not settings.VERA_NEO4J_URI:
            raise ImproperlyConfigured("VERA_MEMORY__GRAPH_BACKEND=neo4j needs VERA_NEO4J_URI.")
        return Neo4jGraphProjection(
            uri=settings.VERA_NEO4J_URI,
            user=settings.VERA_NEO4J_USER,
            password=settings.VERA_NEO4J_PASSWORD,
            database=settings.VERA_NEO4J_DATABASE,
        )
    raise ImproperlyConfigured(
        f"VERA_MEMORY__GRAPH_BACKEND={backend!r}; choose one of {', '.join(GRAPH_BACKENDS)}."
    )


@functools.cache
def redis_client() -> redis.Redis:
    """A Redis client for health checks, rate limits and caches outside Django's cache API."""
    return redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=2, socket_timeout=2)


def reset() -> None:
    """Close and forget every built adapter (settings changed, or a worker forked)."""
    for factory in (graph, redis_client):
        if factory.cache_info().currsize:
            # Closing a broken client must not stop the reset.
            with contextlib.suppress(Exception):
                factory().close()
        factory.cache_clear()


@receiver(setting_changed)
def _on_setting_changed(*, setting: str, **_: Any) -> None:
    if setting.startswith(("VERA_", "REDIS_")):
        reset()
