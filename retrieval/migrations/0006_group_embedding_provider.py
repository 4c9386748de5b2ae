"""A workspace's embedding model is chosen among those offered: the pin names its provider.

Pins recorded before learn it from their model's name; an index finds a workspace's
documents still on a previous model after a switch.
"""

from typing import Any

from django.db import migrations, models

# The providers of the models pins recorded before they named their provider.
KNOWN = (
    ("all-MiniLM-L6-v2", "minilm"),
    ("multilingual-e5-small", "e5"),
    ("hashing-", "hashing"),
    ("text-embedding-", "openai"),
    ("voyage-", "voyage"),
)


def name_providers(apps: Any, schema_editor: Any) -> None:
    """Each existing pin learns its provider from its model's name (unknown ones stay empty).

    RLS is forced even on the owner, so it is lifted for this step inside the
    migration's transaction.
    """
    schema_editor.execute("ALTER TABLE retrieval_groupembedding NO FORCE ROW LEVEL SECURITY")
    for prefix, provider in KNOWN:
        schema_editor.execute(
            "UPDATE retrieval_groupembedding SET provider = %s "
            "WHERE provider = '' AND starts_with(model, %s)",
            [provider, prefix],
        )
    schema_editor.execute("ALTER TABLE retrieval_groupembedding FORCE ROW LEVEL SECURITY")


class Migration(migrations.Migration):
    dependencies = [("retrieval", "0005_lexemes_without_punctuation")]

    operations = [
        migrations.AddField(
            model_name="groupembedding",
            name="provider",
            field=models.CharField(blank=True, default="", max_length=20),
        ),
        migrations.AddField(
            model_name="groupembedding",
            name="switched_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(name_providers, migrations.RunPython.noop),
        migrations.AddIndex(
            model_name="searchdocument",
            index=models.Index(
                fields=["group_id", "embedding_model"], name="searchdoc_group_model"
            ),
        ),
    ]
