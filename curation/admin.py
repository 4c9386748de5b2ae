"""Django admin for curation; every page sees through the request's RLS context."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from common.admin import WrittenByServices, apply_each
from common.errors import PermissionDenied
from curation import selectors
from curation.domain.ontology import PredicateSense
from curation.domain.progress import INTERRUPTED, as_shown, describe_run
from curation.domain.tiers import ClaimStatus
from curation.models import (
    Claim,
    Entity,
    EntityAlias,
    Episode,
    Evidence,
    MergeCandidate,
    OntologyRevision,
    OutboxJob,
    OutboxPause,
    Predicate,
    Reprocessing,
    Source,
)
from curation.tasks import ingest_enqueue, reprocess_enqueue
from curation.usecases import (
    Conflict,
    ReprocessRefused,
    Retraction,
    RetractionRefused,
    RunRefused,
    alias_unlink,
    candidate_decide,
    claim_retract,
    entity_unmerge,
    episode_retract,
    ontology_predicate_reset,
    ontology_predicate_set,
    outbox_backlog,
    outbox_retry,
    proposal_accept,
    review_bulk,
    source_create,
    source_retract,
    source_run_held,
    source_update,
)
from tenants.domain.access import ANONYMOUS, Principal
from tenants.domain.scopes import Role
from tenants.models import Scope
from tenants.principals import request_principal

SOURCE_NEW = ("name", "group_id", "kind", "config", "token_env", "trust_tier", "schedule_seconds")
SOURCE_SETTINGS = ("name", "config", "token_env", "trust_tier", "schedule_seconds", "enabled")
# Set by runs, by the operator (reach) or once at creation (scope, kind): shown, never posted.
SOURCE_STATE = (
    *("group_id", "origin_group_id", "kind", "reach", "cursor", "run_progress", "outbox_lanes"),
    *("run_requested_at", "last_run_at", "last_run_status", "last_error", "created_at"),
)


class SourceForm(forms.ModelForm[Source]):
    """Saved by `source_create` / `source_update` as the last step of its validation.

    The services decide (role, allow-lists, secret-like keys); asking them inside
    `full_clean` makes a refusal a form error rather than a 500, and nothing else saves.
    """

    actor: Principal = ANONYMOUS  # bound per request by SourceAdmin.get_form

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "group_id" in self.fields:  # adding: one of the scopes the actor administers
            scopes = Scope.objects.filter(group_id__in=self.actor.groups_at_least(Role.ADMIN))
            self.fields["group_id"] = forms.ChoiceField(
                label="scope", choices=[(s.group_id, str(s)) for s in scopes.order_by("name")]
            )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.instance.pk is not None and "name" in data:  # the scope is not in the form
            same = Source.objects.filter(group_id=self.instance.group_id, name=data["name"])
            if same.exclude(pk=self.instance.pk).exists():
                self.add_error("name", "another source of this scope has this name")
        return data

    def full_clean(self) -> None:
        super().full_clean()
        if not self.is_bound or self.errors:
            return
        try:
            self.instance.pk = self._save_through_services().pk
        except (ValueError, PermissionDenied) as error:
            self.add_error(None, str(error))

    def _save_through_services(self) -> Source:
        data = self.cleaned_data
        if self.instance.pk is None:
            return source_create(actor=self.actor, **{name: data[name] for name in SOURCE_NEW})
        changes = {name: data[name] for name in SOURCE_SETTINGS if name in self.changed_data}
        if not changes:
            return self.instance
        return source_update(actor=self.actor, source_id=self.instance.pk, **changes)


def _retract_selected(
    model_admin: admin.ModelAdmin[Any], request: HttpRequest, queryset: QuerySet[Any],
    retract: Callable[..., Retraction], keyword: str,
) -> TemplateResponse | None:  # fmt: skip
    """An admin action that retracts each selected row through the retraction service,
    after a page that names the rows and asks why (the reason is required)."""
    reason = request.POST.get("reason", "").strip()
    if request.POST.get("confirmed") and reason:
        actor = request_principal(request)
        for pk in queryset.values_list("pk", flat=True):
            try:
                done = retract(actor=actor, reason=reason, **{keyword: pk})
            except (RetractionRefused, PermissionDenied) as error:
                model_admin.message_user(request, f"#{pk}: {error}", messages.WARNING)
            else:
                model_admin.message_user(request, done.message, messages.SUCCESS)
        return None
    context = {
        **model_admin.admin_site.each_context(request),
        "title": f"Retract {queryset.model._meta.verbose_name_plural}",
        "objects": list(queryset[:200]),
        "count": queryset.count(),
        "action": request.POST.get("action", ""),
        "selected": request.POST.getlist(ACTION_CHECKBOX_NAME),
        "missing_reason": bool(request.POST.get("confirmed")) and not reason,
        "opts": model_admin.model._meta,
    }
    return TemplateResponse(request, "admin/curation/retract_confirm.html", context)


@admin.register(Source)
class SourceAdmin(admin.ModelAdmin[Source]):
    """Sources: settings saved through the source use cases; run state shown, never edited."""

    form = SourceForm
    list_display = ["name", "kind", "trust_tier", "group_id", "enabled", "last_run_at",
                    "last_run_status"]  # fmt: skip
    list_filter = ["kind", "trust_tier", "enabled", "last_run_status"]
    search_fields = ["name", "group_id"]
    actions = ["run_selected", "retract_selected", "reprocess_selected"]

    @admin.action(description="Run now (from the cursor)")
    def run_selected(self, request: HttpRequest, queryset: QuerySet[Source]) -> None:
        """Ask for a run of each source (its scope's admins; a worker runs it), or say
        why not: one going, one already asked for, disabled. Follow it in its progress."""
        actor = request_principal(request)
        for source in queryset.order_by("pk"):
            try:
                asked = ingest_enqueue(actor=actor, source_id=source.pk)
            except (RunRefused, PermissionDenied) as error:
                self.message_user(request, f"{source.name}: {error}", messages.WARNING)
                continue
            when = f"{asked.requested_at:%Y-%m-%d %H:%M:%S %Z}"
            self.message_user(
                request,
                f"{source.name}: run sent to a worker at {when}." if asked.sent
                else f"{source.name}: the run asked for at {when} has not ended yet; "
                "nothing sent again.",
                messages.SUCCESS if asked.sent else messages.INFO,
            )  # fmt: skip

    @admin.action(description="Retract the selected sources (asks why)")
    def retract_selected(
        self, request: HttpRequest, queryset: QuerySet[Source]
    ) -> TemplateResponse | None:
        return _retract_selected(self, request, queryset, source_retract, "source_id")

    @admin.action(description="Reprocess with today's extractors")
    def reprocess_selected(self, request: HttpRequest, queryset: QuerySet[Source]) -> None:
        """Start a run per source (its scope's admins; a worker does the reading), or
        name the run already going; follow them under Reprocessings."""
        actor = request_principal(request)
        for source in queryset.order_by("pk"):
            try:
                run, started = reprocess_enqueue(actor=actor, source=source)
            except (ReprocessRefused, PermissionDenied) as error:
                self.message_user(request, f"{source.name}: {error}", messages.WARNING)
                continue
            what = "started" if started else "already going"
            self.message_user(
                request, f"{source.name}: reprocessing run #{run.pk} {what}, "
                f"{run.counts.get('documents', 0)} of {run.total} documents read.",
                messages.SUCCESS,
            )  # fmt: skip

    def get_fields(self, request: HttpRequest, obj: Source | None = None) -> tuple[str, ...]:
        return SOURCE_NEW if obj is None else (*SOURCE_SETTINGS, *SOURCE_STATE)

    def get_readonly_fields(
        self, request: HttpRequest, obj: Source | None = None
    ) -> tuple[str, ...]:
        return () if obj is None else SOURCE_STATE

    def get_form(
        self, request: HttpRequest, obj: Source | None = None, change: bool = False, **kwargs: Any
    ) -> type[forms.ModelForm[Source]]:
        form = super().get_form(request, obj, change=change, **kwargs)
        # A subclass of `form` (a SourceForm) bound to this request's actor; mypy types a
        # three-argument type() as plain `type`.
        bound = type(form.__name__, (form,), {"actor": request_principal(request)})
        return cast("type[forms.ModelForm[Source]]", bound)

    def save_model(self, request: HttpRequest, obj: Source, form: Any, change: bool) -> None:
        """Nothing left to do: SourceForm saved through the services while validating."""

    def has_delete_permission(self, request: HttpRequest, obj: Source | None = None) -> bool:
        return False  # its episodes and claims cite it; disable it instead

    @admin.display(description="ingest progress")
    def run_progress(self, source: Source) -> str:
        shown = as_shown(source.progress, going=lambda: source_run_held(source.pk))
        described = describe_run(shown)
        if shown.get("state") == INTERRUPTED:  # its worker died mid-run
            return f"{described}: no worker is running it now; the next run goes on from its cursor"
        return described

    @admin.display(description="outbox backlog per consumer")
    def outbox_lanes(self, source: Source) -> str:
        return format_html_join(
            "", "<div>{}: {} pending ({} urgent), {} dead{}</div>",
            ((consumer, lane["pending"], lane["urgent"], lane["dead"],
              f", oldest from {lane['oldest']:%Y-%m-%d %H:%M:%S %Z}" if lane["oldest"] else "")
             for consumer, lane in outbox_backlog().items()),
        )  # fmt: skip


@admin.register(Episode)
class EpisodeAdmin(WrittenByServices, admin.ModelAdmin[Episode]):
    """Episodes are immutable records; only ingestion changes their processing status."""

    list_display = ["external_id", "source", "status", "claims_count", "size", "fetched_at"]
    list_filter = ["status", "source"]
    search_fields = ["external_id", "title", "content_hash"]
    readonly_fields = [*(f.name for f in Episode._meta.fields), "raw_artifact"]
    actions = ["retract_selected"]

    @admin.action(description="Retract the selected episodes (asks why)")
    def retract_selected(
        self, request: HttpRequest, queryset: QuerySet[Episode]
    ) -> TemplateResponse | None:
        return _retract_selected(self, request, queryset, episode_retract, "episode_id")

    @admin.display(description="raw artifact")
    def raw_artifact(self, episode: Episode) -> str:
        if not episode.object_key:
            return "—"
        url = reverse("review:raw", args=[episode.pk])
        return format_html(
            '<a href="{}" target="_blank" rel="noopener">view the stored bytes</a>', url
        )


class EvidenceInline(WrittenByServices, admin.TabularInline[Evidence, Claim]):
    model = Evidence
    extra = 0
    readonly_fields = ["episode", "start", "end", "snippet"]
    can_delete = False


@admin.register(Claim)
class ClaimAdmin(WrittenByServices, admin.ModelAdmin[Claim]):
    """Claims change only through review (actions here, the review queue, the API)."""

    list_display = ["__str__", "status", "tier", "confidence", "valid_from", "valid_to", "source"]
    list_filter = ["status", "tier", "verification", "predicate"]
    search_fields = ["fact_text", "subject__canonical_name", "predicate"]
    raw_id_fields = ["subject", "object_entity", "source"]
    # The lifecycle (status, validity, supersession, version) moves only through review,
    # retraction and ingestion: never by editing the row here.
    readonly_fields = [
        "status", "status_reason", "valid_from", "valid_to", "superseded_by", "recorded_at",
        "version", "reviewed_by", "reviewed_at", "history",
    ]  # fmt: skip
    inlines = [EvidenceInline]
    actions = ["approve_selected", "accept_selected", "retract_selected"]

    @admin.action(description="Retract the selected claims (asks why)")
    def retract_selected(
        self, request: HttpRequest, queryset: QuerySet[Claim]
    ) -> TemplateResponse | None:
        return _retract_selected(self, request, queryset, claim_retract, "claim_id")

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
        outcome = review_bulk(actor=request_principal(request), items=list(items), approve=True)
        self.message_user(
            request, f"{len(outcome.done)} approved, {len(outcome.conflicts)} conflicts."
        )
        for claim_id in outcome.done:  # what each approval came to, in the service's words
            self.message_user(request, outcome.messages[claim_id])
        for claim_id, why in outcome.conflicts.items():
            self.message_user(request, f"#{claim_id}: {why}", messages.WARNING)

    @admin.action(description="Accept the selected proposals")
    def accept_selected(self, request: HttpRequest, queryset: QuerySet[Claim]) -> None:
        actor = request_principal(request)
        for pk, version in queryset.filter(status=ClaimStatus.PROPOSED).values_list(
            "pk", "version"
        ):
            try:
                outcome = proposal_accept(actor=actor, claim_id=pk, version=version)
            except (Conflict, PermissionDenied) as error:
                self.message_user(request, f"#{pk}: {error}", messages.WARNING)
                continue
            # Published, or closed as a duplicate: the service's words, never "accepted".
            self.message_user(request, outcome.message)


class AliasInline(WrittenByServices, admin.TabularInline[EntityAlias, Entity]):
    """Surface forms are linked by entity resolution: a hand-typed alias has no norm."""

    model = EntityAlias
    extra = 0
    fields = ("alias", "alias_norm", "method", "score", "created_at")
    readonly_fields = fields


@admin.register(EntityAlias)
class EntityAliasAdmin(WrittenByServices, admin.ModelAdmin[EntityAlias]):
    """Surface forms and how each was linked (method, score); an automatic link can be undone."""

    list_display = ["alias", "entity", "method", "score", "created_at"]
    list_filter = ["method"]
    search_fields = ["alias", "alias_norm"]
    fields = (
        "alias", "alias_norm", "entity", "method", "score", "embedding_model", "created_at",
    )  # fmt: skip
    readonly_fields = fields
    actions = ["unlink_selected"]

    @admin.action(description="Unlink the selected automatic links into entities of their own")
    def unlink_selected(self, request: HttpRequest, queryset: QuerySet[EntityAlias]) -> None:
        actor = request_principal(request)
        for pk in queryset.values_list("pk", flat=True):
            try:
                unlinked = alias_unlink(actor=actor, alias_id=pk)
            except (ValueError, PermissionDenied) as error:
                self.message_user(request, f"alias #{pk}: {error}", messages.WARNING)
                continue
            check = ", ".join(f"#{claim_id}" for claim_id in unlinked.claims_to_check)
            self.message_user(
                request,
                f"{unlinked.entity} is an entity of its own now (#{unlinked.entity.pk})"
                + (f"; check claims {check} of #{unlinked.previous.pk}" if check else ""),
            )


@admin.register(Entity)
class EntityAdmin(WrittenByServices, admin.ModelAdmin[Entity]):
    """Entities come from resolution; merges are decided on merge candidates, undone here."""

    list_display = ["canonical_name", "entity_type", "merged_into", "group_id"]
    list_filter = ["entity_type"]
    search_fields = ["canonical_name", "aliases__alias_norm"]
    raw_id_fields = ["merged_into"]
    inlines = [AliasInline]
    actions = ["unmerge_selected"]

    @admin.action(description="Undo the selected entities' merges")
    def unmerge_selected(self, request: HttpRequest, queryset: QuerySet[Entity]) -> None:
        actor = request_principal(request)
        apply_each(
            self,
            request,
            queryset.filter(merged_into__isnull=False).values_list("pk", flat=True),
            lambda pk: entity_unmerge(actor=actor, entity_id=pk),
            done="merge(s) undone",
        )


@admin.register(MergeCandidate)
class MergeCandidateAdmin(WrittenByServices, admin.ModelAdmin[MergeCandidate]):
    """Possible duplicates; decided by the actions, through `candidate_decide` (audited)."""

    list_display = ["entity", "candidate", "method", "score", "status", "created_at"]
    list_filter = ["status", "method"]
    raw_id_fields = ["entity", "candidate"]
    actions = ["merge_selected", "keep_apart_selected"]

    def _decide(
        self, request: HttpRequest, queryset: QuerySet[MergeCandidate], *, merge: bool
    ) -> None:
        actor = request_principal(request)
        apply_each(
            self,
            request,
            queryset.filter(status=MergeCandidate.Status.OPEN).values_list("pk", flat=True),
            lambda pk: candidate_decide(actor=actor, candidate_id=pk, merge=merge),
            done="merged" if merge else "kept apart",
        )

    @admin.action(description="Merge each selected entity into its candidate")
    def merge_selected(self, request: HttpRequest, queryset: QuerySet[MergeCandidate]) -> None:
        self._decide(request, queryset, merge=True)

    @admin.action(description="Keep the selected pairs apart (they are different things)")
    def keep_apart_selected(self, request: HttpRequest, queryset: QuerySet[MergeCandidate]) -> None:
        self._decide(request, queryset, merge=False)


@admin.register(Reprocessing)
class ReprocessingAdmin(WrittenByServices, admin.ModelAdmin[Reprocessing]):
    """Reprocessing runs and how far each got; started by the Source action, the API or
    `manage.py reprocess`, worked by a worker, never edited here."""

    list_display = ["id", "source", "status", "progress", "requested_by", "started_at",
                    "updated_at", "finished_at"]  # fmt: skip
    list_filter = ["status"]
    search_fields = ["source__name", "requested_by", "reason"]
    fields = ("source", "group_id", "status", "progress", "outcome", "failures", "error",
              "requested_by", "reason", "everything", "version", "total", "cursor",
              "started_at", "updated_at", "finished_at")  # fmt: skip
    readonly_fields = fields

    @admin.display(description="documents read")
    def progress(self, run: Reprocessing) -> str:
        return f"{run.counts.get('documents', 0)} / {run.total}"

    @admin.display(description="what they came to")
    def outcome(self, run: Reprocessing) -> str:
        counts = {k: v for k, v in run.counts.items() if k != "documents" and isinstance(v, int)}
        return ", ".join(f"{key} {value}" for key, value in sorted(counts.items())) or "—"

    @admin.display(description="documents not read again")
    def failures(self, run: Reprocessing) -> str:
        return (
            format_html_join(
                "", "<div>{}: {}</div>", (tuple(each) for each in run.counts.get("failures", []))
            )
            or "—"
        )


@admin.register(OutboxPause)
class OutboxPauseAdmin(WrittenByServices, admin.ModelAdmin[OutboxPause]):
    """Groups whose jobs a consumer holds off (a graph rebuild of the group is running).

    A rebuild lifts its pause when it ends; one killed mid-way leaves it: lift it with
    the action, and the consumer catches up.
    """

    list_display = ["consumer", "group_id", "reason", "created_at"]
    actions = ["lift"]

    @admin.action(description="Lift the selected pauses (the consumer catches up)")
    def lift(self, request: HttpRequest, queryset: QuerySet[OutboxPause]) -> None:
        count, _ = queryset.delete()
        self.message_user(request, f"{count} pause(s) lifted.", messages.SUCCESS)


@admin.register(OutboxJob)
class OutboxJobAdmin(WrittenByServices, admin.ModelAdmin[OutboxJob]):
    """The outbox per consumer, dead letters included; retry puts dead jobs back in the queue."""

    list_display = ["pk", "consumer", "kind", "priority", "status", "attempts", "available_at",
                    "created_at", "done_at"]  # fmt: skip
    list_filter = ["consumer", "status", "priority", "kind"]
    search_fields = ["last_error"]
    readonly_fields = [f.name for f in OutboxJob._meta.fields]
    actions = ["retry_dead_jobs"]

    @admin.action(description="Retry the selected dead jobs")
    def retry_dead_jobs(self, request: HttpRequest, queryset: QuerySet[OutboxJob]) -> None:
        count = outbox_retry(job_ids=list(queryset.values_list("pk", flat=True)))
        self.message_user(request, f"{count} dead job(s) queued again.", messages.SUCCESS)


# --- the ontology ------------------------------------------------------------------------

PREDICATE_NEW = ("group_id", "name", "label", "description", "words", "questions",
                 "object_type", "functional")  # fmt: skip
PREDICATE_SENSE = ("label", "description", "words", "questions", "object_type", "functional")
PREDICATE_STATE = ("group_id", "name", "updated_at")  # the row's identity, and the service's


class LinesField(forms.Field):
    """A list of text as a textarea, one entry per line (entries may hold commas)."""

    widget = forms.Textarea(attrs={"rows": 6, "cols": 60})

    def prepare_value(self, value: Any) -> Any:
        return "\n".join(value) if isinstance(value, list | tuple) else value

    def to_python(self, value: Any) -> list[str]:
        return [line.strip() for line in str(value or "").splitlines() if line.strip()]


class PredicateForm(forms.ModelForm[Predicate]):
    """Saved by `ontology_predicate_set` as the last step of its validation (as SourceForm):
    the service decides (admin role, the domain's rules) and a refusal is a form error."""

    actor: Principal = ANONYMOUS  # bound per request by PredicateAdmin.get_form
    words = LinesField(required=False, help_text="one per line")
    questions = LinesField(
        required=False, help_text='one per line, X for the entity ("who owns X")'
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "group_id" in self.fields:  # adding: one of the scopes the actor administers
            scopes = Scope.objects.filter(group_id__in=self.actor.groups_at_least(Role.ADMIN))
            self.fields["group_id"] = forms.ChoiceField(
                label="scope", choices=[(s.group_id, str(s)) for s in scopes.order_by("name")]
            )

    def full_clean(self) -> None:
        super().full_clean()
        if not self.is_bound or self.errors:
            return
        try:
            self._save_through_services()
        except (ValueError, PermissionDenied) as error:
            self.add_error(None, str(error))

    def _save_through_services(self) -> None:
        data, instance = self.cleaned_data, self.instance
        group_id = instance.group_id if instance.pk else data["group_id"]
        name = instance.name if instance.pk else data["name"]
        sense = PredicateSense(
            name=name, label=data["label"], description=data["description"],
            words=tuple(data["words"]), questions=tuple(data["questions"]),
            object_type=data["object_type"], functional=data["functional"],
        )  # fmt: skip
        ontology_predicate_set(actor=self.actor, group_id=group_id, sense=sense)
        saved = Predicate.objects.filter(group_id=group_id, name=name).first()
        if saved is None:  # the service stored nothing: the default says this already
            raise ValueError(f"{name} has this sense by default; nothing to store")
        instance.pk = saved.pk


@admin.register(Predicate)
class PredicateAdmin(admin.ModelAdmin[Predicate]):
    """A workspace's own predicate senses: saved through `ontology_predicate_set`, reset to
    the default through `ontology_predicate_reset` (both audited, each a new version)."""

    form = PredicateForm
    list_display = ["name", "label", "object_type", "functional", "group_id", "updated_at"]
    list_filter = ["functional", "object_type"]
    search_fields = ["name", "label", "group_id"]
    actions = ["reset_selected"]

    def get_fields(self, request: HttpRequest, obj: Predicate | None = None) -> tuple[str, ...]:
        return PREDICATE_NEW if obj is None else (*PREDICATE_STATE, *PREDICATE_SENSE)

    def get_readonly_fields(
        self, request: HttpRequest, obj: Predicate | None = None
    ) -> tuple[str, ...]:
        return () if obj is None else PREDICATE_STATE

    def get_form(
        self, request: HttpRequest, obj: Predicate | None = None, change: bool = False,
        **kwargs: Any,
    ) -> type[forms.ModelForm[Predicate]]:  # fmt: skip
        form = super().get_form(request, obj, change=change, **kwargs)
        bound = type(form.__name__, (form,), {"actor": request_principal(request)})
        return cast("type[forms.ModelForm[Predicate]]", bound)

    def save_model(self, request: HttpRequest, obj: Predicate, form: Any, change: bool) -> None:
        """Nothing left to do: PredicateForm saved through the service while validating."""

    def has_delete_permission(self, request: HttpRequest, obj: Predicate | None = None) -> bool:
        return False  # resetting to the default is an edit too: the action below

    @admin.action(description="Reset the selected predicates to the default")
    def reset_selected(self, request: HttpRequest, queryset: QuerySet[Predicate]) -> None:
        actor = request_principal(request)
        rows = {pk: (group_id, name) for pk, group_id, name in
                queryset.values_list("pk", "group_id", "name")}  # fmt: skip
        apply_each(
            self, request, rows,
            lambda pk: ontology_predicate_reset(
                actor=actor, group_id=rows[pk][0], name=rows[pk][1]
            ),
            done="reset to the default",
        )  # fmt: skip


@admin.register(OntologyRevision)
class OntologyRevisionAdmin(WrittenByServices, admin.ModelAdmin[OntologyRevision]):
    """Every version of each workspace's ontology, whole, as its edit left it."""

    list_display = ["group_id", "version", "action", "name", "actor", "created_at"]
    list_filter = ["action"]
    search_fields = ["group_id", "name", "actor"]
    readonly_fields = [f.name for f in OntologyRevision._meta.fields]
