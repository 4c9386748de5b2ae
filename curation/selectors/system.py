"""System finders: work due across every group, read in one query through a
`vera_*` SQL function that needs no tenant context (outbox lanes, due groups and dead
letters; sources due; stale reprocessing runs)."""

from __future__ import annotations

import datetime as dt

from django.db import connection

from curation.domain.backpressure import OUTBOX_LANES, LaneLoad
from curation.domain.outbox import Consumer, Lane, Priority
from tenants.models import Scope


def outbox_lane_load(*, now: dt.datetime) -> dict[Lane, LaneLoad]:
    """Each outbox lane's pending due jobs of every group and the longest wait among them.

    One query over the pending jobs' partial index through the system finder
    `vera_outbox_lane_load` (counts only): it needs no tenant context.
    """
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM vera_outbox_lane_load(%s, %s)", [now, Priority.INTERACTIVE])
        rows = cursor.fetchall()
    loads = {lane: LaneLoad(lane) for lane in OUTBOX_LANES}
    for urgent, backlog, due_since in rows:
        lane = Lane.INTERACTIVE if urgent else Lane.PROJECTION
        wait = (now - due_since).total_seconds()
        loads[lane] = LaneLoad(lane, backlog=backlog, oldest_age_s=wait)
    return loads


def outbox_due_groups(
    *, consumer: Consumer, max_priority: Priority, now: dt.datetime, limit: int
) -> list[str]:
    """The groups owning the `limit` jobs a claim of the consumer would take now (due,
    not paused, most urgent first), across every group: a tenant context of just these
    groups then claims exactly those jobs (system finder `vera_outbox_due_groups`)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT * FROM vera_outbox_due_groups(%s, %s, %s, %s)",
            [consumer.value, int(max_priority), now, limit],
        )
        return sorted(group_id for (group_id,) in cursor.fetchall())


def sources_due(*, now: dt.datetime, resend_before: dt.datetime) -> list[tuple[int, str]]:
    """(id, group) of every enabled source whose schedule has come round and that is not
    already asked for (a run sent since its last run ended, unless sent before
    `resend_before`), across every group (system finder `vera_sources_due`), except in
    archived scopes (read-only)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM vera_sources_due(%s, %s)", [now, resend_before])
        due = [(source_id, group_id) for source_id, group_id in cursor.fetchall()]
    archived = set(
        Scope.objects.filter(
            group_id__in={group for _, group in due}, archived_at__isnull=False
        ).values_list("group_id", flat=True)
    )
    return [(source_id, group) for source_id, group in due if group not in archived]


def reprocessings_stale(*, before: dt.datetime) -> list[tuple[int, str]]:
    """(id, group) of every running reprocessing run last advanced before then, across
    every group (system finder `vera_reprocessings_stale`)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, group_id FROM vera_reprocessings_stale(%s)", [before])
        return [(run_id, group_id) for run_id, group_id in cursor.fetchall()]


def outbox_dead_letters() -> dict[Consumer, int]:
    """Each consumer's dead jobs (out of attempts) across every group: one count over
    their partial index through the system finder `vera_outbox_dead_letters`."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM vera_outbox_dead_letters()")
        counts = dict(cursor.fetchall())
    return {consumer: counts.get(consumer.value, 0) for consumer in Consumer}
