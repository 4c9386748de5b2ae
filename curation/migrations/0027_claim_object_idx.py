from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    # Built concurrently: the claims table is the largest of the record, and a plain
    # CREATE INDEX would block every write to it while it runs (about 10 s per million
    # claims here).
    atomic = False

    dependencies = [
        ("curation", "0026_claim_insert_guard"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="claim",
            index=models.Index(
                fields=["object_entity", "predicate", "status"], name="claim_object_idx"
            ),
        ),
    ]
