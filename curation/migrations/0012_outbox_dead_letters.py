"""Dead letters per consumer for the metrics: a partial index and a system finder that
counts over it across every group (see `tenants.rls.system_finder`), counts only."""

from django.db import migrations, models

from tenants import rls

OUTBOX_DEAD_LETTERS = """
    SELECT j.consumer, count(*) FROM curation_outboxjob j
    WHERE j.status = 'dead'
      AND EXISTS (SELECT 1 FROM tenants_scope g WHERE g.group_id = j.group_id)
    GROUP BY j.consumer
"""


class Migration(migrations.Migration):
    dependencies = [("curation", "0011_system_finders")]

    operations = [
        migrations.AddIndex(
            model_name="outboxjob",
            index=models.Index(
                condition=models.Q(("status", "dead")), fields=["consumer"], name="outbox_dead_idx"
            ),
        ),
        rls.system_finder(
            "vera_outbox_dead_letters()",
            returns="TABLE (consumer text, dead bigint)",
            body=OUTBOX_DEAD_LETTERS,
        ),
    ]
