from django.db import migrations, models

# When a workspace admin last set or removed the workspace's companion model: a nullable
# column with no default, so adding it rewrites nothing.


class Migration(migrations.Migration):
    dependencies = [
        ("retrieval", "0023_postings_by_group"),
    ]

    operations = [
        migrations.AddField(
            model_name="groupembedding",
            name="companion_chosen_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
