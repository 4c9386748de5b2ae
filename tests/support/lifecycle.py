"""Fixtures that build a claim history by hand, past the lifecycle service's guard."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection, transaction

from curation.services.lifecycle import WRITER_SETTING


@contextmanager
def history_written_by_hand() -> Iterator[None]:
    """Let a test set claims' status, validity, supersession or version directly, as the
    setting-up of a history it then reads (the product writes them through
    `curation.services.lifecycle` only; the FSM trigger still applies)."""
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT set_config(%s, 'on', true)", [WRITER_SETTING])
        yield
        with connection.cursor() as cursor:
            cursor.execute("SELECT set_config(%s, 'off', true)", [WRITER_SETTING])
