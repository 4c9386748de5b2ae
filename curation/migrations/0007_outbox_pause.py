"""A consumer can hold off one group's outbox jobs (while that group's graph is rebuilt)."""

from django.db import migrations, models

from tenants import rls


class Migration(migrations.Migration):
    dependencies = [("curation", "0006_claim_literal_key_digest")]

    operations = [
        migrations.CreateModel(
            name="OutboxPause",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False,
                                           verbose_name="ID")),
                ("group_id", models.CharField(max_length=40)),
                ("consumer", models.CharField(choices=[("graph", "graph"), ("index", "index")],
                                              max_length=20)),
                ("reason", models.CharField(max_length=200)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("consumer", "group_id"), name="outbox_pause_once"
                    )
                ],
            },
        ),
        rls.enable_rls("curation_outboxpause"),
    ]  # fmt: skip
