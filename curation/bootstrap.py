"""Where curation's entrypoints get their adapters: the composition root installs them.

Apps may not import the project package (`vera`), so `vera.apps` hands the built
providers in at start-up, as cosmicpython's bootstrap does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from django.core.exceptions import ImproperlyConfigured

from curation.domain.outbox import Consumer
from curation.models import OutboxJob, Source
from curation.ports import GraphProjection, ObjectStore
from curation.services.ingest import IngestAdapters, ReadAdapters
from curation.services.outbox import BatchHandler, Handler


class Providers(Protocol):
    """What the composition root provides to curation's entrypoints."""

    def ingest_adapters_for(self, source: Source) -> IngestAdapters:
        """The connector, extractors and stores for one source; ValueError if misconfigured."""
        ...

    def read_adapters_for(self, source: Source) -> ReadAdapters:
        """What re-reading the source's stored records needs (no connector, no secret)."""
        ...

    def graph(self) -> GraphProjection: ...

    def object_store(self) -> ObjectStore: ...

    def outbox_handlers(self, consumer: Consumer) -> dict[str, Handler]: ...

    def outbox_prepare(self, consumer: Consumer) -> Callable[[list[OutboxJob]], None] | None: ...

    def outbox_batch(self, consumer: Consumer) -> BatchHandler | None:
        """Runs many of the consumer's jobs in one go (falls back to `outbox_handlers`)."""
        ...

    def outbox_available(self, consumer: Consumer) -> str:
        """Why the consumer's backend cannot take work now; "" when it can."""
        ...


_installed: Providers | None = None


def install(providers: Providers) -> None:
    global _installed
    _installed = providers


def providers() -> Providers:
    if _installed is None:
        raise ImproperlyConfigured("the composition root has not installed curation's providers")
    return _installed
