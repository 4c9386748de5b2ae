"""Django admin for retrieval: the index, logged hits, votes and embedding pins (read-only)."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from retrieval.models import Feedback, GroupEmbedding, SearchDocument, SearchHit


class ReadOnlyAdmin(admin.ModelAdmin):
    """Projections and logs are written by the system, never by hand."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


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
