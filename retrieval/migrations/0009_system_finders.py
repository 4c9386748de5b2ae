"""System finder for the snapshot sweep: the snapshots waiting to be built, across every
group, without a tenant context listing every scope (see `tenants.rls.system_finder`)."""

from django.db import migrations

from tenants import rls

SNAPSHOTS_BUILDING = """
    SELECT n.id, n.group_id FROM retrieval_snapshot n
    WHERE n.status = 'building'
      AND EXISTS (SELECT 1 FROM tenants_scope s WHERE s.group_id = n.group_id)
    ORDER BY n.id
"""


class Migration(migrations.Migration):
    dependencies = [("retrieval", "0008_snapshots")]

    operations = [
        rls.system_reads("retrieval_snapshot"),
        rls.system_finder(
            "vera_snapshots_building()",
            returns="TABLE (snapshot_id bigint, group_id text)",
            body=SNAPSHOTS_BUILDING,
        ),
    ]
