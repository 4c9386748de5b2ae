"""The agents' source: a kind of source that is no connector, one per workspace at most,
never scheduled (so the scheduler's finder, which asks for a schedule, never returns it).
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("curation", "0015_published_reads"),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="source",
            name="source_kind",
        ),
        migrations.AlterField(
            model_name="source",
            name="kind",
            field=models.CharField(
                choices=[
                    ("markdown", "markdown"),
                    ("cmdb", "cmdb"),
                    ("confluence", "confluence"),
                    ("jira", "jira"),
                    ("slack", "slack"),
                    ("agent", "agent"),
                ],
                max_length=20,
            ),
        ),
        migrations.AddConstraint(
            model_name="source",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("kind__in", ("markdown", "cmdb", "confluence", "jira", "slack", "agent"))
                ),
                name="source_kind",
            ),
        ),
        migrations.AddConstraint(
            model_name="source",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("kind", "agent"), _negated=True),
                    ("schedule_seconds__isnull", True),
                    _connector="OR",
                ),
                name="source_agent_never_scheduled",
            ),
        ),
        migrations.AddConstraint(
            model_name="source",
            constraint=models.UniqueConstraint(
                condition=models.Q(("kind", "agent")),
                fields=("group_id",),
                name="source_one_agent_per_group",
            ),
        ),
    ]
