"""System finders: the outbox worker, the scheduler and the backpressure measurement find
the groups that have work in one query, without a tenant context listing every scope.

See `tenants.rls.system_finder`: each returns group ids, row ids or counts, never content;
the work itself then runs in a tenant context of only the groups found. Jobs and sources
of a group id with no scope stay invisible, as they were to the all-scopes principal.
"""

from django.db import migrations

from tenants import rls

# The groups owning the first `p_limit` jobs the consumer's claim would take, in the
# claim's own order (priority, due time, id) over the pending jobs' partial index: a
# claim under a context of just these groups takes the same jobs as one over all groups.
OUTBOX_DUE_GROUPS = """
    SELECT DISTINCT due.group_id FROM (
        SELECT j.group_id FROM curation_outboxjob j
        WHERE j.consumer = p_consumer AND j.status = 'pending'
          AND j.available_at <= p_now AND j.priority <= p_max_priority
          AND EXISTS (SELECT 1 FROM tenants_scope g WHERE g.group_id = j.group_id)
          AND NOT EXISTS (
              SELECT 1 FROM curation_outboxpause p
              WHERE p.consumer = j.consumer AND p.group_id = j.group_id
          )
        ORDER BY j.priority, j.available_at, j.id
        LIMIT p_limit
    ) due
"""

# Pending due jobs per lane (urgent: priority up to `p_urgent`) and the oldest due time.
OUTBOX_LANE_LOAD = """
    SELECT j.priority <= p_urgent, count(*), min(j.available_at)
    FROM curation_outboxjob j
    WHERE j.status = 'pending' AND j.available_at <= p_now
      AND EXISTS (SELECT 1 FROM tenants_scope g WHERE g.group_id = j.group_id)
    GROUP BY 1
"""

# Enabled sources whose schedule has come round (never run, or run a period ago).
SOURCES_DUE = """
    SELECT s.id, s.group_id FROM curation_source s
    WHERE s.enabled AND s.schedule_seconds IS NOT NULL
      AND (s.last_run_at IS NULL
           OR s.last_run_at + make_interval(secs => s.schedule_seconds) <= p_now)
      AND EXISTS (SELECT 1 FROM tenants_scope g WHERE g.group_id = s.group_id)
    ORDER BY s.id
"""


class Migration(migrations.Migration):
    dependencies = [
        ("curation", "0010_outbox_trace_context"),
        ("tenants", "0003_scope_rate_limits"),
    ]

    operations = [
        rls.system_reads("curation_outboxjob", "curation_outboxpause", "curation_source"),
        rls.system_finder(
            "vera_outbox_due_groups(p_consumer text, p_max_priority integer, "
            "p_now timestamptz, p_limit integer)",
            returns="SETOF text",
            body=OUTBOX_DUE_GROUPS,
        ),
        rls.system_finder(
            "vera_outbox_lane_load(p_now timestamptz, p_urgent integer)",
            returns="TABLE (urgent boolean, backlog bigint, due_since timestamptz)",
            body=OUTBOX_LANE_LOAD,
        ),
        rls.system_finder(
            "vera_sources_due(p_now timestamptz)",
            returns="TABLE (source_id bigint, group_id text)",
            body=SOURCES_DUE,
        ),
    ]
