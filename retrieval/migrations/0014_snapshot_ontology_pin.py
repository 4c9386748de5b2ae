"""A knowledge snapshot pins the version of its workspace's ontology."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("retrieval", "0013_learning_finders"),
        # The version names an OntologyRevision of curation's.
        ("curation", "0013_predicate_ontology"),
    ]

    operations = [
        migrations.AddField(
            model_name="snapshot",
            name="ontology_version",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
    ]
