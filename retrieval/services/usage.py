"""Provider usage per workspace and day: the flush from the ledger into Postgres."""

from __future__ import annotations

import logging

from django.db import connection

from retrieval.ports import UsageLedger
from tenants import rls
from tenants.domain.access import Principal
from tenants.domain.scopes import Role

logger = logging.getLogger(__name__)

# Adds to the day's row, so flushes from any number of workers never lose an update.
_UPSERT = """
    INSERT INTO retrieval_providerusage
        (group_id, day, provider, model, calls, tokens, cost_usd)
    VALUES (%s, %s, %s, %s, %s, %s, %s)
    ON CONFLICT (group_id, day, provider, model) DO UPDATE SET
        calls = retrieval_providerusage.calls + EXCLUDED.calls,
        tokens = retrieval_providerusage.tokens + EXCLUDED.tokens,
        cost_usd = retrieval_providerusage.cost_usd + EXCLUDED.cost_usd
"""


def provider_usage_flush(*, ledger: UsageLedger) -> int:
    """Write what the ledger collected into each workspace's day rows; how many rows.

    Runs in a tenant context of just the groups drained (the `(shared)` bucket among
    them). If the write fails the totals go back to the ledger for the next flush.
    """
    totals = ledger.drain()
    if not totals:
        return 0
    # Built from the drained ids, not from scopes: `(shared)` is nobody's scope.
    writer = Principal(
        label="system:metering", roles=dict.fromkeys({t.group_id for t in totals}, Role.OWNER)
    )
    try:
        with rls.tenant_context(writer), connection.cursor() as cursor:
            cursor.executemany(
                _UPSERT,
                [
                    (t.group_id, t.day, t.provider, t.model, t.calls, t.tokens, t.cost_usd)
                    for t in totals
                ],
            )
    except Exception:
        ledger.restore(totals)
        raise
    return len(totals)
