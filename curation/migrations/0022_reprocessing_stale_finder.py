"""A system finder for the reprocessing runs still "running" that nobody has advanced
since a time, across every group (see `tenants.rls.system_finder`): the sweep
`curation.resume_reprocessing` sends each again, in a context of its group alone."""

from django.db import migrations

from tenants import rls

STALE_RUNS = """
    SELECT r.id, r.group_id FROM curation_reprocessing r
    WHERE r.status = 'running' AND r.updated_at < p_before
    ORDER BY r.id
"""


class Migration(migrations.Migration):
    dependencies = [("curation", "0021_tombstone_failed")]

    operations = [
        rls.system_reads("curation_reprocessing"),
        rls.system_finder(
            "vera_reprocessings_stale(p_before timestamptz)",
            returns="TABLE (id bigint, group_id text)",
            body=STALE_RUNS,
        ),
    ]
