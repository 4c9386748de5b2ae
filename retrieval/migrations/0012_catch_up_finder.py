"""System finder for the index catch-up (every minute): the workspaces whose documents are
on another model than their pin, and those with a companion model, across every group in
one query, without a tenant context listing every scope (see `tenants.rls.system_finder`).

Stale documents are found through the (group_id, embedding_model) index: two range scans
per pin (models sorting before and after the pinned one), never a scan of the group.
"""

from django.db import migrations

from tenants import rls

GROUPS_TO_CATCH_UP = """
    SELECT g.group_id,
           EXISTS (SELECT 1 FROM retrieval_searchdocument d
                   WHERE d.group_id = g.group_id AND d.embedding_model < g.model)
           OR EXISTS (SELECT 1 FROM retrieval_searchdocument d
                      WHERE d.group_id = g.group_id AND d.embedding_model > g.model),
           g.companion
    FROM retrieval_groupembedding g
    WHERE EXISTS (SELECT 1 FROM tenants_scope s WHERE s.group_id = g.group_id)
    ORDER BY g.group_id
"""


class Migration(migrations.Migration):
    dependencies = [("retrieval", "0011_snapshot_generation")]

    operations = [
        rls.system_reads("retrieval_groupembedding", "retrieval_searchdocument"),
        rls.system_finder(
            "vera_groups_to_catch_up()",
            returns="TABLE (group_id text, stale boolean, companion text)",
            body=GROUPS_TO_CATCH_UP,
        ),
    ]
