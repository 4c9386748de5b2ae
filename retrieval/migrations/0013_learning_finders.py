"""System finders for the nightly learning loop: the workspaces with votes on hits logged
since a time (calibration's samples) and those with enabled golden queries (evaluation),
across every group in one query each, without a tenant context listing every scope (see
`tenants.rls.system_finder`). Each run then acts in a context of its workspace alone.
"""

from django.db import migrations

from tenants import rls

GROUPS_WITH_VOTES = """
    SELECT DISTINCT f.group_id FROM retrieval_feedback f
    JOIN retrieval_searchhit h ON h.id = f.hit_id
    WHERE h.created_at >= p_since
      AND EXISTS (SELECT 1 FROM tenants_scope s WHERE s.group_id = f.group_id)
    ORDER BY f.group_id
"""

GROUPS_WITH_GOLDEN = """
    SELECT DISTINCT q.group_id FROM retrieval_goldenquery q
    WHERE q.enabled
      AND EXISTS (SELECT 1 FROM tenants_scope s WHERE s.group_id = q.group_id)
    ORDER BY q.group_id
"""


class Migration(migrations.Migration):
    dependencies = [("retrieval", "0012_catch_up_finder")]

    operations = [
        rls.system_reads("retrieval_feedback", "retrieval_searchhit", "retrieval_goldenquery"),
        rls.system_finder(
            "vera_groups_with_votes(p_since timestamptz)",
            returns="TABLE (group_id text)",
            body=GROUPS_WITH_VOTES,
        ),
        rls.system_finder(
            "vera_groups_with_golden()", returns="TABLE (group_id text)", body=GROUPS_WITH_GOLDEN
        ),
    ]
