"""Documents' lexemes are made from their text with ASCII punctuation read as a space.

`SearchDocument.tsv` is recomputed by Postgres (a generated column cannot be altered:
it is dropped and added again, with its index), then the postings BM25 reads are
rebuilt from the new lexemes, each term's impact at the constants of
`retrieval.domain.lexical` and its group's average length; the statement-level
triggers keep the document frequencies and corpus sizes exact. RLS is forced even on
the owner, so it is lifted for this step inside the migration's transaction.
"""

from typing import Any

import django.contrib.postgres.indexes
import django.contrib.postgres.search
from django.db import migrations, models

from curation.domain.validity import VALID_NOW
from retrieval.domain import lexical

TABLES = (
    "retrieval_searchdocument",
    "retrieval_lexicalterm",
    "retrieval_lexicaltermstat",
    "retrieval_lexicalcorpus",
)
LENGTHS = """
    SELECT d.claim_id, d.group_id, d.status, d.tsv,
           (SELECT sum(coalesce(array_length(positions, 1), 1)) FROM unnest(d.tsv)) AS doc_len
    FROM retrieval_searchdocument d
"""
REBUILD = f"""
    WITH documents AS ({LENGTHS}),
    averages AS (
        SELECT group_id, avg(doc_len)::float8 AS avg_len FROM documents
        WHERE doc_len > 0 GROUP BY group_id
    )
    INSERT INTO retrieval_lexicalterm (group_id, claim_id, term, tf, doc_len, published, impact)
    SELECT d.group_id, d.claim_id, t.term, t.tf, d.doc_len, d.status = %(valid_now)s,
           t.tf * (%(k1)s + 1) / (t.tf + %(k1)s * (1 - %(b)s + %(b)s * d.doc_len / a.avg_len))
    FROM documents d JOIN averages a ON a.group_id = d.group_id
    CROSS JOIN LATERAL (
        SELECT lexeme AS term, coalesce(array_length(positions, 1), 1) AS tf FROM unnest(d.tsv)
    ) t
"""  # noqa: S608 - fixed SQL; values are parameters


def rebuild_postings(apps: Any, schema_editor: Any) -> None:
    for table in TABLES:
        schema_editor.execute(f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY")
    schema_editor.execute("DELETE FROM retrieval_lexicalterm")
    schema_editor.execute(REBUILD, {"valid_now": VALID_NOW.value, "k1": lexical.K1, "b": lexical.B})
    for table in TABLES:
        schema_editor.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")


class Migration(migrations.Migration):
    dependencies = [("retrieval", "0004_nightly_learning_schedule")]

    operations = [
        migrations.RemoveIndex(model_name="searchdocument", name="searchdoc_tsv"),
        migrations.RemoveField(model_name="searchdocument", name="tsv"),
        migrations.AddField(
            model_name="searchdocument",
            name="tsv",
            field=models.GeneratedField(
                db_persist=True,
                expression=django.contrib.postgres.search.SearchVector(
                    models.Func(
                        models.F("text"),
                        models.Value("[!-/:-@\\[-`{-~]+"),
                        models.Value(" "),
                        models.Value("g"),
                        function="regexp_replace",
                        output_field=models.TextField(),
                    ),
                    config="simple",
                ),
                output_field=django.contrib.postgres.search.SearchVectorField(),
            ),
        ),
        migrations.AddIndex(
            model_name="searchdocument",
            index=django.contrib.postgres.indexes.GinIndex(fields=["tsv"], name="searchdoc_tsv"),
        ),
        migrations.RunPython(rebuild_postings, migrations.RunPython.noop),
    ]
