"""A snapshot search reads indexes, as a live one does, instead of every row it holds.

- Snapshot postings carry their impact (BM25's term-frequency part at the snapshot's
  own average length), `published` and validity, in covering indexes, so each query
  term reads its best postings valid then and stops; their document frequencies are
  kept per snapshot by triggers (`SnapshotTermStat`). Snapshots sealed before keep NULLs
  (under their seal, which does not change) and read every posting.
- Snapshot documents get the live index's partial HNSW indexes, one per dimension.
- The understood list (the claims about the entities a question names) finds them by
  the subject's name through an index, live and in snapshots, instead of a full scan.

Not atomic: the live index's new index is built concurrently, so indexing and searching
go on while it builds.
"""

import django.db.models.deletion
import django.db.models.functions.text
import pgtrigger.compiler
import pgtrigger.migrations
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models

from tenants import rls

DIMENSIONS = (256, 384, 1024, 1536)  # retrieval.models.INDEXED_DIMENSIONS


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("curation", "0014_entity_identity"),
        ("retrieval", "0016_postings_validity"),
    ]

    operations = [
        migrations.CreateModel(
            name="SnapshotTermStat",
            fields=[
                (
                    "pk",
                    models.CompositePrimaryKey(
                        "snapshot_id",
                        "term",
                        blank=True,
                        editable=False,
                        primary_key=True,
                        serialize=False,
                    ),
                ),
                ("group_id", models.CharField(max_length=40)),
                ("term", models.TextField()),
                ("df", models.PositiveIntegerField()),
                (
                    "snapshot",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="retrieval.snapshot",
                    ),
                ),
            ],
        ),
        migrations.AddField(
            model_name="snapshotterm",
            name="impact",
            field=models.FloatField(null=True),
        ),
        migrations.AddField(
            model_name="snapshotterm",
            name="published",
            field=models.BooleanField(null=True),
        ),
        migrations.AddField(
            model_name="snapshotterm",
            name="valid_from",
            field=models.DateTimeField(null=True),
        ),
        migrations.AddField(
            model_name="snapshotterm",
            name="valid_to",
            field=models.DateTimeField(null=True),
        ),
        AddIndexConcurrently(
            model_name="searchdocument",
            index=models.Index(
                django.db.models.functions.text.Lower("subject_name"), name="searchdoc_subject"
            ),
        ),
        migrations.AddIndex(
            model_name="snapshotdocument",
            index=models.Index(
                models.F("snapshot"),
                django.db.models.functions.text.Lower("subject_name"),
                name="snapshotdoc_subject",
            ),
        ),
        migrations.AddIndex(
            model_name="snapshotterm",
            index=models.Index(
                fields=["snapshot", "term", "-impact"],
                include=("claim_id", "tf", "doc_len", "group_id", "valid_from", "valid_to"),
                name="snapterm_term_impact",
            ),
        ),
        migrations.AddIndex(
            model_name="snapshotterm",
            index=models.Index(
                condition=models.Q(("published", True)),
                fields=["snapshot", "term", "-impact"],
                include=("claim_id", "tf", "doc_len", "group_id"),
                name="snapterm_published_impact",
            ),
        ),
        pgtrigger.migrations.AddTrigger(
            model_name="snapshotterm",
            trigger=pgtrigger.compiler.Trigger(
                name="snapshotterm_count_added",
                sql=pgtrigger.compiler.UpsertTriggerSql(
                    func="\n    INSERT INTO retrieval_snapshottermstat AS s (group_id, snapshot_id, term, df)\n        SELECT group_id, snapshot_id, term, count(*) FROM changed WHERE impact IS NOT NULL\n        GROUP BY group_id, snapshot_id, term ORDER BY 2, 3\n    ON CONFLICT (snapshot_id, term) DO UPDATE SET df = s.df + excluded.df;\n    RETURN NULL;\n",
                    hash="42fe3d9cd19f40d1575609a6ebfb258e001c47a6",
                    level="STATEMENT",
                    operation="INSERT",
                    pgid="pgtrigger_snapshotterm_count_added_a77bd",
                    referencing="REFERENCING NEW TABLE AS changed ",
                    table="retrieval_snapshotterm",
                    when="AFTER",
                ),
            ),
        ),
        pgtrigger.migrations.AddTrigger(
            model_name="snapshotterm",
            trigger=pgtrigger.compiler.Trigger(
                name="snapshotterm_count_removed",
                sql=pgtrigger.compiler.UpsertTriggerSql(
                    func="\n    UPDATE retrieval_snapshottermstat AS s SET df = s.df - r.df\n        FROM (\n            SELECT snapshot_id, term, count(*) AS df FROM changed WHERE impact IS NOT NULL\n            GROUP BY snapshot_id, term ORDER BY 1, 2\n        ) AS r\n        WHERE s.snapshot_id = r.snapshot_id AND s.term = r.term;\n    DELETE FROM retrieval_snapshottermstat AS s USING changed AS r\n        WHERE s.snapshot_id = r.snapshot_id AND s.term = r.term AND s.df <= 0;\n    RETURN NULL;\n",
                    hash="c89b3c73eb0119d4cdcb9554c8b3eaca442c9a63",
                    level="STATEMENT",
                    operation="DELETE",
                    pgid="pgtrigger_snapshotterm_count_removed_af73b",
                    referencing="REFERENCING OLD TABLE AS changed ",
                    table="retrieval_snapshotterm",
                    when="AFTER",
                ),
            ),
        ),
        pgtrigger.migrations.AddTrigger(
            model_name="snapshottermstat",
            trigger=pgtrigger.compiler.Trigger(
                name="snapshottermstat_added",
                sql=pgtrigger.compiler.UpsertTriggerSql(
                    func="\n    UPDATE retrieval_snapshot SET generation = generation + 1\n    WHERE id IN (SELECT DISTINCT snapshot_id FROM changed);\n    RETURN NULL;\n",
                    hash="49e8ec5425774af4ed562b24603ab9fb66a6a56d",
                    level="STATEMENT",
                    operation="INSERT",
                    pgid="pgtrigger_snapshottermstat_added_281c5",
                    referencing="REFERENCING NEW TABLE AS changed ",
                    table="retrieval_snapshottermstat",
                    when="AFTER",
                ),
            ),
        ),
        pgtrigger.migrations.AddTrigger(
            model_name="snapshottermstat",
            trigger=pgtrigger.compiler.Trigger(
                name="snapshottermstat_removed",
                sql=pgtrigger.compiler.UpsertTriggerSql(
                    func="\n    UPDATE retrieval_snapshot SET generation = generation + 1\n    WHERE id IN (SELECT DISTINCT snapshot_id FROM changed);\n    RETURN NULL;\n",
                    hash="290f5a40e7b1f118c2379756b5020a571ecd7d80",
                    level="STATEMENT",
                    operation="DELETE",
                    pgid="pgtrigger_snapshottermstat_removed_eba8d",
                    referencing="REFERENCING OLD TABLE AS changed ",
                    table="retrieval_snapshottermstat",
                    when="AFTER",
                ),
            ),
        ),
        pgtrigger.migrations.AddTrigger(
            model_name="snapshottermstat",
            trigger=pgtrigger.compiler.Trigger(
                name="snapshottermstat_updated",
                sql=pgtrigger.compiler.UpsertTriggerSql(
                    func="\n    UPDATE retrieval_snapshot SET generation = generation + 1\n    WHERE id IN (SELECT DISTINCT snapshot_id FROM changed);\n    RETURN NULL;\n",
                    hash="e53983227aab45d33a31d6fe75973e5883fad7b7",
                    level="STATEMENT",
                    operation="UPDATE",
                    pgid="pgtrigger_snapshottermstat_updated_4c340",
                    referencing="REFERENCING NEW TABLE AS changed ",
                    table="retrieval_snapshottermstat",
                    when="AFTER",
                ),
            ),
        ),
        rls.enable_rls("retrieval_snapshottermstat"),
        *[
            migrations.RunSQL(
                f"CREATE INDEX snapshotdoc_hnsw_{dim} ON retrieval_snapshotdocument USING hnsw "
                f"((embedding::vector({dim})) vector_cosine_ops) WHERE dimension = {dim}",
                reverse_sql=f"DROP INDEX IF EXISTS snapshotdoc_hnsw_{dim}",
            )
            for dim in DIMENSIONS
        ],
    ]
