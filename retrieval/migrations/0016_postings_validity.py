"""Postings carry their claim's validity, so a search "as of" a time reads the postings
alone: each term's best postings valid then, filtered inside a covering index, instead
of joining every posting to its document (the as-of lexical half cost ten times now's).

The existing postings take their documents' validity. Postings are never updated in
service (a re-index rewrites them); the no-update trigger is lifted for this one step,
and RLS (forced even on the owner) with it, inside the migration's transaction.
"""

from typing import Any

from django.db import migrations, models

TABLES = ("retrieval_searchdocument", "retrieval_lexicalterm")
BACKFILL = """
    UPDATE retrieval_lexicalterm t SET valid_from = d.valid_from, valid_to = d.valid_to
    FROM retrieval_searchdocument d WHERE d.claim_id = t.claim_id
"""


def backfill(apps: Any, schema_editor: Any) -> None:
    import pgtrigger

    for table in TABLES:
        schema_editor.execute(f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY")
    with pgtrigger.ignore("retrieval.LexicalTerm:lexicalterm_no_update"):
        schema_editor.execute(BACKFILL)
    # A posting whose document is gone is an orphan a re-index would have removed.
    schema_editor.execute("DELETE FROM retrieval_lexicalterm WHERE valid_from IS NULL")
    for table in TABLES:
        schema_editor.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")


class Migration(migrations.Migration):
    dependencies = [("retrieval", "0015_weightset_understood")]

    operations = [
        migrations.RemoveIndex(model_name="lexicalterm", name="lexterm_term_impact"),
        migrations.AddField(
            model_name="lexicalterm", name="valid_from", field=models.DateTimeField(null=True)
        ),
        migrations.AddField(
            model_name="lexicalterm", name="valid_to", field=models.DateTimeField(null=True)
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="lexicalterm", name="valid_from", field=models.DateTimeField()
        ),
        migrations.AddIndex(
            model_name="lexicalterm",
            index=models.Index(
                fields=["term", "-impact"],
                include=("claim_id", "tf", "doc_len", "group_id", "valid_from", "valid_to"),
                name="lexterm_term_impact",
            ),
        ),
    ]
