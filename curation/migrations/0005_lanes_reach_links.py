"""Outbox lanes (a job per consumer, with a priority), source reach and progress, alias links."""

import django.utils.timezone
from django.db import migrations, models

# Jobs pending before this migration served both projections at once: each becomes a
# graph job and gets an index twin. RLS is forced even on the owner, so it is lifted
# for this one statement inside the migration's transaction.
SPLIT_PENDING = """
ALTER TABLE curation_outboxjob NO FORCE ROW LEVEL SECURITY;
INSERT INTO curation_outboxjob (
    group_id, consumer, priority, kind, payload, status, attempts, available_at,
    last_error, created_at, done_at
)
SELECT group_id, 'index', priority, kind, payload, status, attempts, available_at,
       last_error, created_at, done_at
FROM curation_outboxjob WHERE consumer = 'graph' AND status <> 'done';
ALTER TABLE curation_outboxjob FORCE ROW LEVEL SECURITY;
"""


class Migration(migrations.Migration):
    dependencies = [("curation", "0004_claim_queue_order")]

    operations = [
        migrations.AddField(
            model_name="source",
            name="progress",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AddField(
            model_name="source",
            name="reach",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AddField(
            model_name="entityalias",
            name="method",
            field=models.CharField(blank=True, max_length=20),
        ),
        migrations.AddField(
            model_name="entityalias",
            name="score",
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="entityalias",
            name="created_at",
            field=models.DateTimeField(default=django.utils.timezone.now),
        ),
        migrations.AddField(
            model_name="outboxjob",
            name="consumer",
            field=models.CharField(
                choices=[("graph", "graph"), ("index", "index")], default="graph", max_length=20
            ),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="outboxjob",
            name="priority",
            field=models.PositiveSmallIntegerField(default=10),
        ),
        migrations.RunSQL(SPLIT_PENDING, reverse_sql=migrations.RunSQL.noop),
        migrations.RemoveIndex(model_name="outboxjob", name="outbox_pending_idx"),
        migrations.AddIndex(
            model_name="outboxjob",
            index=models.Index(
                condition=models.Q(("status", "pending")),
                fields=["consumer", "priority", "available_at"],
                name="outbox_pending_idx",
            ),
        ),
        migrations.AddConstraint(
            model_name="outboxjob",
            constraint=models.CheckConstraint(
                condition=models.Q(("consumer__in", ["graph", "index"])),
                name="outbox_consumer_known",
            ),
        ),
    ]
