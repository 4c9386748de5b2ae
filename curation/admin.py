"""Django admin for curation; every page sees through the request's RLS context."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from curation import selectors
from curation.domain.tiers import ClaimStatus
from curation.models import (
    Claim,
    Entity,
    EntityAlias,
    Episode,
    Evidence,
    MergeCandidate,
    OutboxJob,
    Source,
)
from curation.services import review
from curation.services.outbox import outbox_retry
from tenants.middleware import request_principal
from tenants.services.scopes import PermissionDenied


@admin.register(Source)
class SourceAdmin(admin.ModelAdmin):
    list_display = ["name", "kind", "trust_tier", "group_id", "enabled", "last_run_at",
                    "last_run_status"]  # fmt: skip
    list_filter = ["kind", "trust_tier", "enabled", "last_run_status"]
    search_fields = ["name", "group_id"]
    readonly_fields = ["cursor", "last_run_at", "last_run_status", "last_error", "created_at"]


@admin.register(Episode)
class EpisodeAdmin(admin.ModelAdmin):
    """Episodes are immutable records; only their processing status changes."""

    list_display = ["external_id", "source", "status", "claims_count", "size", "fetched_at"]
    list_filter = ["status", "source"]
    search_fields = ["external_id", "title", "content_hash"]
    readonly_fields = [*(f.name for f in Episode._meta.fields), "raw_artifact"]

    @admin.display(description="raw artifact")
    def raw_artifact(self, episode: Episode) -> str:
        if not episode.object_key:
            return "—"
        url = reverse("review:raw", args=[episode.pk])
        return format_html(
            '<a href="{}" target="_blank" rel="noopener">view the stored bytes</a>', url
        )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Episode | None = None) -> bool:
        return False


class EvidenceInline(admin.TabularInline):
    model = Evidence
    extra = 0
    readonly_fields = ["episode", "start", "end", "snippet"]
    can_delete = False


@admin.register(Claim)
class ClaimAdmin(admin.ModelAdmin):
    list_display = ["__str__", "status", "tier", "confidence", "valid_from", "valid_to", "source"]
    list_filter = ["status", "tier", "verification", "predicate"]
    search_fields = ["fact_text", "subject__canonical_name", "predicate"]
    raw_id_fields = ["subject", "object_entity", "superseded_by", "source"]
    readonly_fields = ["recorded_at", "version", "reviewed_by", "reviewed_at", "history"]
    inlines = [EvidenceInline]
    actions = ["approve_selected", "accept_selected"]

    @admin.display(description="history")
    def history(self, claim: Claim) -> str:
        rows = selectors.claim_history(claim_id=claim.pk) if claim.pk else []
        return format_html_join(
            "", '<div><a href="{}">#{}</a> {} {} … {}</div>',
            ((reverse("review:claim-detail", args=[h.pk]), h.pk, h.status,
              h.valid_from.date(), h.valid_to.date() if h.valid_to else "now") for h in rows),
        )  # fmt: skip

    @admin.action(description="Approve the selected claims waiting for review")
    def approve_selected(self, request: HttpRequest, queryset: QuerySet[Claim]) -> None:
        items = queryset.filter(status=ClaimStatus.PENDING_REVIEW).values_list("pk", "version")
        outcome = review.review_bulk(
            actor=request_principal(request), items=list(items), approve=True
        )
        self.message_user(
            request, f"{len(outcome.done)} approved, {len(outcome.conflicts)} conflicts."
        )

    @admin.action(description="Accept the selected proposals")
    def accept_selected(self, request: HttpRequest, queryset: QuerySet[Claim]) -> None:
        actor = request_principal(request)
        accepted = 0
        for pk, version in queryset.filter(status=ClaimStatus.PROPOSED).values_list(
            "pk", "version"
        ):
            try:
                review.proposal_accept(actor=actor, claim_id=pk, version=version)
            except (review.Conflict, PermissionDenied):
                continue
            accepted += 1
        self.message_user(request, f"{accepted} proposal(s) accepted.")


class AliasInline(admin.TabularInline):
    model = EntityAlias
    extra = 0
    fields = ["alias", "alias_norm"]
    readonly_fields = ["alias_norm"]


@admin.register(Entity)
class EntityAdmin(admin.ModelAdmin):
    list_display = ["canonical_name", "entity_type", "merged_into", "group_id"]
    list_filter = ["entity_type"]
    search_fields = ["canonical_name", "aliases__alias_norm"]
    raw_id_fields = ["merged_into"]
    inlines = [AliasInline]


@admin.register(MergeCandidate)
class MergeCandidateAdmin(admin.ModelAdmin):
    list_display = ["entity", "candidate", "method", "score", "status", "created_at"]
    list_filter = ["status", "method"]
    raw_id_fields = ["entity", "candidate"]


@admin.register(OutboxJob)
class OutboxJobAdmin(admin.ModelAdmin):
    """The outbox, dead letters included; retry puts dead jobs back in the queue."""

    list_display = ["pk", "kind", "status", "attempts", "available_at", "created_at", "done_at"]
    list_filter = ["status", "kind"]
    search_fields = ["last_error"]
    readonly_fields = [f.name for f in OutboxJob._meta.fields]
    actions = ["retry_dead_jobs"]

    @admin.action(description="Retry the selected dead jobs")
    def retry_dead_jobs(self, request: HttpRequest, queryset: QuerySet[OutboxJob]) -> None:
        count = outbox_retry(job_ids=list(queryset.values_list("pk", flat=True)))
        self.message_user(request, f"{count} dead job(s) queued again.", messages.SUCCESS)
