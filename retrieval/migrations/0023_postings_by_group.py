from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations, models

# The postings indexes lead with the group (retrieval/models.py). Built concurrently and
# one at a time, each new index before the old one it replaces is dropped: the postings
# are the largest table of the index (28.7M rows, 4.2 and 3.4 GB for these two indexes
# at a million claims), writes go on meanwhile, and a search always has an index to read.


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("retrieval", "0022_subject_key"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="lexicalterm",
            index=models.Index(
                condition=models.Q(("published", True)),
                fields=["group_id", "term", "-impact"],
                include=("claim_id", "tf", "doc_len"),
                name="lexterm_group_published",
            ),
        ),
        RemoveIndexConcurrently(model_name="lexicalterm", name="lexterm_published_impact"),
        AddIndexConcurrently(
            model_name="lexicalterm",
            index=models.Index(
                fields=["group_id", "term", "-impact"],
                include=("claim_id", "tf", "doc_len", "valid_from", "valid_to", "published"),
                name="lexterm_group_term_impact",
            ),
        ),
        RemoveIndexConcurrently(model_name="lexicalterm", name="lexterm_term_impact"),
    ]
