"""A source's run is asked for once: `run_requested_at` records when a run was sent to a
worker (by the schedule or an admin's "run now"), and the scheduler's finder no longer
sends a source whose request is still waiting or running.

Before, a source whose run outlasted its schedule was sent again every minute while it
ran (its `last_run_at` is written when a run ends), and the copies queued behind it on
the ingest lane. The finder now skips a source asked for after its last run ended,
unless that request is older than `p_resend_before` (its message lost, its worker gone):
then it is sent again, and a copy that finds the run going, or answered, does nothing.
"""

from django.db import migrations, models

from tenants import rls

SOURCES_DUE_BEFORE = """
    SELECT s.id, s.group_id FROM curation_source s
    WHERE s.enabled AND s.schedule_seconds IS NOT NULL
      AND (s.last_run_at IS NULL
           OR s.last_run_at + make_interval(secs => s.schedule_seconds) <= p_now)
      AND EXISTS (SELECT 1 FROM tenants_scope g WHERE g.group_id = s.group_id)
    ORDER BY s.id
"""

# Enabled sources whose schedule has come round and that are not already asked for: no
# request since the last run ended, or one so old it is sent again.
SOURCES_DUE = """
    SELECT s.id, s.group_id FROM curation_source s
    WHERE s.enabled AND s.schedule_seconds IS NOT NULL
      AND (s.last_run_at IS NULL
           OR s.last_run_at + make_interval(secs => s.schedule_seconds) <= p_now)
      AND (s.run_requested_at IS NULL
           OR s.run_requested_at <= s.last_run_at
           OR s.run_requested_at < p_resend_before)
      AND EXISTS (SELECT 1 FROM tenants_scope g WHERE g.group_id = s.group_id)
    ORDER BY s.id
"""

_OLD = "vera_sources_due(p_now timestamptz)"
_NEW = "vera_sources_due(p_now timestamptz, p_resend_before timestamptz)"
_RETURNS = "TABLE (source_id bigint, group_id text)"


def _drop(signature: str) -> str:
    return f"DROP FUNCTION IF EXISTS {signature}"


def _create(signature: str, body: str) -> str:
    sql = rls.system_finder(signature, returns=_RETURNS, body=body).sql
    return str(sql[0])


class Migration(migrations.Migration):
    dependencies = [
        ("curation", "0028_evidence_episode_start_idx"),
    ]

    operations = [
        migrations.AddField(
            model_name="source",
            name="run_requested_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunSQL(
            (_drop(_OLD), _create(_NEW, SOURCES_DUE)),
            reverse_sql=(_drop(_NEW), _create(_OLD, SOURCES_DUE_BEFORE)),
        ),
    ]
