"""The search index of the scopes above a principal's own is readable to it (it holds
only claims that were ever valid): the groups in `vera.read_groups` may SELECT the index
documents, postings, their statistics and the embedding pins. Never a write."""

from django.db import migrations

from tenants import rls

TABLES = (
    "retrieval_searchdocument", "retrieval_lexicalterm", "retrieval_lexicaltermstat",
    "retrieval_lexicalcorpus", "retrieval_companionvector", "retrieval_groupembedding",
)  # fmt: skip


class Migration(migrations.Migration):
    dependencies = [
        ("retrieval", "0017_snapshot_indexes"),
        ("tenants", "0007_read_groups"),
    ]

    operations = [rls.published_reads(table) for table in TABLES]
