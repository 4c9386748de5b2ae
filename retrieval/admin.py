"""Django admin for retrieval: the index, logged hits, votes and embedding pins (read-only)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin

from retrieval.models import Feedback, GroupEmbedding, SearchDocument, SearchHit
from tenants.admin import WrittenByServices


class ReadOnlyAdmin(WrittenByServices, admin.ModelAdmin[Any]):
    """Projections and logs are written by the system, never edited or deleted by hand.

    The index is rebuilt with `search_reindex`; the logs feed ranking and calibration.
    """


@admin.register(SearchDocument)
class SearchDocumentAdmin(ReadOnlyAdmin):
    list_display = ["claim_id", "subject_name", "predicate", "status", "tier", "embedding_model"]
    list_filter = ["status", "tier", "embedding_model"]
    search_fields = ["text", "subject_name"]
    exclude = ["embedding", "tsv"]


@admin.register(SearchHit)
class SearchHitAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "query_text", "claim_id", "rank", "score"]
    search_fields = ["query_text"]


@admin.register(Feedback)
class FeedbackAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "claim_id", "helpful", "user"]
    list_filter = ["helpful"]


@admin.register(GroupEmbedding)
class GroupEmbeddingAdmin(ReadOnlyAdmin):
    list_display = ["group_id", "model", "dimension", "created_at"]
