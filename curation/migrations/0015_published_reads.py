# ruff: noqa: S608 - fixed SQL fragments of this migration, no input
"""Members of a scope read the published knowledge of the scopes above it (a workspace's
members read their organisation's facts): the groups in `vera.read_groups` may SELECT
claims that were ever valid, their evidence, the episodes and sources those cite and the
entities they are about. Nothing pending, proposed or rejected; never a write."""

from django.db import migrations

from tenants import rls

_EVER_VALID = "('published', 'superseded', 'retracted')"  # curation.domain.validity.EVER_VALID
_PUBLISHED_CLAIM = f"c.status IN {_EVER_VALID}"


class Migration(migrations.Migration):
    dependencies = [
        ("curation", "0014_entity_identity"),
        ("tenants", "0007_read_groups"),
    ]

    operations = [
        rls.published_reads("curation_claim", published=f"status IN {_EVER_VALID}"),
        rls.published_reads(
            "curation_evidence",
            published="EXISTS (SELECT 1 FROM curation_claim c"
            f" WHERE c.id = curation_evidence.claim_id AND {_PUBLISHED_CLAIM})",
        ),
        rls.published_reads(
            "curation_episode",
            published="EXISTS (SELECT 1 FROM curation_evidence e"
            " JOIN curation_claim c ON c.id = e.claim_id"
            f" WHERE e.episode_id = curation_episode.id AND {_PUBLISHED_CLAIM})",
        ),
        rls.published_reads(
            "curation_source",
            published="EXISTS (SELECT 1 FROM curation_claim c"
            f" WHERE c.source_id = curation_source.id AND {_PUBLISHED_CLAIM})",
        ),
        rls.published_reads(
            "curation_entity",
            published="EXISTS (SELECT 1 FROM curation_claim c WHERE (c.subject_id ="
            " curation_entity.id OR c.object_entity_id = curation_entity.id)"
            f" AND {_PUBLISHED_CLAIM})",
        ),
    ]
