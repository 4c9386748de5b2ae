"""Retrieval persistence: the search index (a projection of published claims), hits, votes.

Every table carries `group_id` under forced row-level security (migrations).
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import Q
from pgvector.django import VectorField

# Dimensions with an HNSW index (pgvector indexes need a fixed dimension): hashing,
# MiniLM, Voyage, OpenAI text-embedding-3-small.
INDEXED_DIMENSIONS = (256, 384, 1024, 1536)


class GroupEmbedding(models.Model):
    """The embedding model and dimension a group was built with; other writes are refused."""

    group_id = models.CharField(max_length=40, unique=True)
    model = models.CharField(max_length=100)
    dimension = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.group_id}: {self.model} ({self.dimension})"


class SearchDocument(models.Model):
    """One published claim as the search index sees it: text, vector and ranking signals."""

    group_id = models.CharField(max_length=40)
    claim = models.OneToOneField(
        "curation.Claim", on_delete=models.CASCADE, related_name="search_document"
    )
    text = models.TextField()
    # `simple`: no stemming, no stop words, diacritics kept — any language by exact form.
    tsv = models.GeneratedField(
        expression=SearchVector("text", config="simple"),
        output_field=SearchVectorField(),
        db_persist=True,
    )
    embedding = VectorField(null=True)
    dimension = models.PositiveIntegerField(null=True)
    embedding_model = models.CharField(max_length=100, blank=True)
    # Denormalised signals and filters, so ranking needs no join.
    status = models.CharField(max_length=20)
    predicate = models.CharField(max_length=100)
    subject_name = models.CharField(max_length=300)
    source_id = models.BigIntegerField()
    tier = models.PositiveSmallIntegerField()
    authority = models.FloatField()
    verification = models.FloatField()
    confidence = models.FloatField()
    valid_from = models.DateTimeField()
    valid_to = models.DateTimeField(null=True, blank=True)
    indexed_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [
            GinIndex(fields=["tsv"], name="searchdoc_tsv"),
            models.Index(fields=["group_id", "status"], name="searchdoc_group_status"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(embedding__isnull=True) | Q(dimension__isnull=False),
                name="searchdoc_dimension_with_embedding",
            )
        ]

    def __str__(self) -> str:
        return f"claim {self.claim_id}"


class SearchHit(models.Model):
    """A hit returned to a caller, with the signal vector it was ranked by (for calibration)."""

    group_id = models.CharField(max_length=40)
    query_id = models.UUIDField(db_index=True)
    query_text = models.TextField()
    claim_id = models.BigIntegerField()
    rank = models.PositiveSmallIntegerField()
    score = models.FloatField()
    signals = models.JSONField()
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"hit {self.pk} (claim {self.claim_id})"


class Feedback(models.Model):
    """A thumbs up or down on a hit."""

    group_id = models.CharField(max_length=40)
    hit = models.ForeignKey(SearchHit, on_delete=models.CASCADE, related_name="votes")
    claim_id = models.BigIntegerField(db_index=True)
    helpful = models.BooleanField()
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["hit", "user"], name="feedback_once_per_user_and_hit")
        ]

    def __str__(self) -> str:
        return f"{'+' if self.helpful else '-'} claim {self.claim_id}"
