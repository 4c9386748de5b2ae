"""Django admin for retrieval: the index, logged hits, votes and embedding pins (read-only),
and the learning loop: weight sets (switched by actions), runs (read-only), golden queries."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any, cast
from urllib.parse import urlencode

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet, Sum
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html

from common.admin import WrittenByServices
from common.errors import PermissionDenied
from curation.models import Tombstone
from retrieval import usecases
from retrieval.domain.query import MAX_QUERY_CHARS
from retrieval.models import (
    CalibrationRun,
    EvaluationResult,
    EvaluationRun,
    Feedback,
    GoldenQuery,
    GroupEmbedding,
    ProviderUsage,
    SearchDocument,
    SearchHit,
    Snapshot,
    WeightActivation,
    WeightSet,
)
from tenants.domain.access import ANONYMOUS, Principal
from tenants.domain.scopes import Role, ScopeKind
from tenants.models import Scope
from tenants.principals import request_principal
from tenants.usecases import audit_record


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


def administers_a_workspace(request: HttpRequest) -> bool:
    """Whether the user holds the admin role in some workspace (rows are RLS-filtered)."""
    administered = request_principal(request).groups_at_least(Role.ADMIN)
    return any(group.startswith(f"{ScopeKind.WORKSPACE.value}:") for group in administered)


@admin.register(ProviderUsage)
class ProviderUsageAdmin(ReadOnlyAdmin):
    """The cost page: provider calls, tokens and cost per workspace, day and model.

    A workspace admin sees the workspaces they administer; usage charged to several
    workspaces at once is in the `(shared)` bucket, which no workspace sees.
    """

    list_display = ["day", "group_id", "provider", "model", "calls", "tokens", "cost_usd"]
    list_filter = ["provider", "model"]
    date_hierarchy = "day"
    ordering = ["-day", "group_id", "provider", "model"]
    change_list_template = "admin/retrieval/providerusage_change_list.html"

    def get_queryset(self, request: HttpRequest) -> QuerySet[ProviderUsage]:
        # RLS shows every group the user reads; cost is an administrator's figure.
        rows = super().get_queryset(request)
        if super().has_view_permission(request):
            return rows
        return rows.filter(group_id__in=request_principal(request).groups_at_least(Role.ADMIN))

    def has_view_permission(self, request: HttpRequest, obj: ProviderUsage | None = None) -> bool:
        return super().has_view_permission(request, obj) or administers_a_workspace(request)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return super().has_module_permission(request) or self.has_view_permission(request)

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        response = super().changelist_view(request, extra_context)
        if not isinstance(response, TemplateResponse) or response.context_data is None:
            return response  # a redirect (an invalid filter): no rows to add up
        changelist = response.context_data.get("cl")
        if changelist is not None:
            response.context_data["usage_totals"] = changelist.queryset.aggregate(
                calls=Sum("calls"), tokens=Sum("tokens"), cost_usd=Sum("cost_usd")
            )
        return response


class _WorkspaceModelForm(forms.Form):
    """A workspace the user administers, an offered model in `model_field`, a reason."""

    model_field = "provider"
    workspace = forms.ChoiceField()
    reason = forms.CharField(max_length=500, widget=forms.TextInput(attrs={"size": 60}))

    def __init__(self, *args: Any, workspaces: list[Scope], choices: tuple[str, ...],
                 **kwargs: Any) -> None:  # fmt: skip
        super().__init__(*args, **kwargs)
        workspace = cast(forms.ChoiceField, self.fields["workspace"])
        workspace.choices = [(scope.group_id, str(scope)) for scope in workspaces]
        model = cast(forms.ChoiceField, self.fields[self.model_field])
        model.choices = [*self.extra_choices, *((name, name) for name in choices)]
        self.order_fields(["workspace", self.model_field, "reason", "confirm"])

    extra_choices: tuple[tuple[str, str], ...] = ()


class EmbeddingSwitchForm(_WorkspaceModelForm):
    """Switch one workspace to another offered embedding model."""

    provider = forms.ChoiceField(label="model")
    confirm = forms.BooleanField(
        label="I understand: until the worker has re-embedded a document, vector search "
        "does not see it (full text still finds it)."
    )


class EmbeddingCompanionForm(_WorkspaceModelForm):
    """Search one workspace with a second offered model too, or no more."""

    model_field = "companion"
    extra_choices = (("none", "none"),)
    companion = forms.ChoiceField(label="second model")
    confirm = forms.BooleanField(
        label="I understand: every document of the workspace is embedded a second time "
        "(or, for none, its second vectors are deleted)."
    )


@admin.register(GroupEmbedding)
class GroupEmbeddingAdmin(ReadOnlyAdmin):
    """Each workspace's embedding model, and how far the re-embedding after a switch got.

    The switch page lets a workspace admin choose among the models the operator offers
    (VERA_EMBEDDER__CHOICES); the worker re-embeds the documents in the background.
    """

    list_display = ["group_id", "provider", "model", "dimension", "progress", "second_model",
                    "switched_at", "created_at"]  # fmt: skip
    change_list_template = "admin/retrieval/groupembedding_change_list.html"

    def has_view_permission(self, request: HttpRequest, obj: GroupEmbedding | None = None) -> bool:
        """Model permission, or the admin role in a workspace (rows are RLS-filtered)."""
        return super().has_view_permission(request, obj) or administers_a_workspace(request)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return super().has_module_permission(request) or self.has_view_permission(request)

    @admin.display(description="documents on this model")
    def progress(self, obj: GroupEmbedding) -> str:
        left, total = usecases.catch_up_progress(obj.group_id)
        return f"{total - left} of {total}" + (" (re-embedding)" if left else "")

    @admin.display(description="second model")
    def second_model(self, obj: GroupEmbedding) -> str:
        if not obj.companion:
            # An admin's removal stands: a conversation source brings none back.
            return "none (an admin's choice)" if obj.companion_chosen_at else "-"
        catalog = usecases.offered_models()
        if obj.companion not in catalog.choices():
            return f"{obj.companion} (not offered: unused)"
        total = SearchDocument.objects.filter(group_id=obj.group_id).count()
        model = catalog.passage(obj.companion).model
        missing = usecases.companion_missing(obj.group_id, model).count()
        return f"{obj.companion}: {total - missing} of {total}" + (
            " (embedding)" if missing else ""
        )

    def get_urls(self) -> list[URLPattern]:
        switch = path(
            "switch/",
            self.admin_site.admin_view(self.switch_view),
            name="retrieval_groupembedding_switch",
        )
        companion = path(
            "companion/",
            self.admin_site.admin_view(self.companion_view),
            name="retrieval_groupembedding_companion",
        )
        return [switch, companion, *super().get_urls()]

    def _model_page(
        self,
        request: HttpRequest,
        form_class: type[_WorkspaceModelForm],
        use_case: Callable[[dict[str, Any]], str],
        *,
        title: str,
        template: str,
    ) -> HttpResponse:
        """A page choosing a workspace and an offered model, then calling the use case
        (whose refusal is shown on the form, whose message after the redirect)."""
        actor = request_principal(request)
        catalog = usecases.offered_models()
        workspaces = list(
            Scope.objects.filter(
                group_id__in=actor.groups_at_least(Role.ADMIN), kind=ScopeKind.WORKSPACE
            ).order_by("name")
        )
        form = form_class(request.POST or None, workspaces=workspaces, choices=catalog.choices())
        if request.method == "POST" and form.is_valid():
            try:
                message = use_case(form.cleaned_data)
            except (usecases.SwitchRefused, PermissionDenied) as refused:
                form.add_error(None, str(refused))
            else:
                self.message_user(request, message, messages.SUCCESS)
                return HttpResponseRedirect(reverse("admin:retrieval_groupembedding_changelist"))
        context = {
            **self.admin_site.each_context(request),
            "title": title,
            "form": form,
            "offered": catalog.choices(),
            "default": catalog.default,
            "opts": self.model._meta,
        }
        return TemplateResponse(request, template, context)

    def companion_view(self, request: HttpRequest) -> HttpResponse:
        def use_case(data: dict[str, Any]) -> str:
            chosen = data["companion"]
            return usecases.embedding_companion(
                actor=request_principal(request), group_id=data["workspace"],
                provider=None if chosen == "none" else chosen, reason=data["reason"],
            ).message  # fmt: skip

        return self._model_page(
            request, EmbeddingCompanionForm, use_case,
            title="Search a workspace with a second embedding model",
            template="admin/retrieval/embedding_companion.html",
        )  # fmt: skip

    def switch_view(self, request: HttpRequest) -> HttpResponse:
        def use_case(data: dict[str, Any]) -> str:
            return usecases.embedding_switch(
                actor=request_principal(request), group_id=data["workspace"],
                provider=data["provider"], reason=data["reason"],
            ).message  # fmt: skip

        return self._model_page(
            request, EmbeddingSwitchForm, use_case,
            title="Switch a workspace's embedding model",
            template="admin/retrieval/embedding_switch.html",
        )  # fmt: skip


# --- The learning loop -------------------------------------------------------------------


REASON = "admin action"  # what the audit trail and the activation history record


def _quality_url(group_id: str | None = None) -> str:
    url = reverse("search:quality")
    return f"{url}?{urlencode({'group': group_id})}" if group_id else url


class LinkedToQualityAdmin(ReadOnlyAdmin):
    """A read-only changelist that links to the portal's Quality page (charts, confirmation)."""

    change_list_template = "admin/retrieval/quality_change_list.html"

    @admin.display(description="quality")
    def quality_link(self, obj: WeightSet | EvaluationRun) -> str:
        return format_html('<a href="{}">Quality page</a>', _quality_url(obj.group_id))


@admin.register(WeightSet)
class WeightSetAdmin(LinkedToQualityAdmin):
    """Weight sets: stored by calibration, switched only by the weights use cases.

    An action cannot ask "are you sure?", so an activation the golden set doubts is
    refused here with the reason; the Quality page asks and confirms.
    """

    list_display = ["__str__", "group_id", "origin", "active", "activated_at", "activated_by",
                    "understood", "helpful", "unhelpful", "created_at",
                    "quality_link"]  # fmt: skip
    list_filter = ["active", "origin"]
    search_fields = ["group_id"]
    actions = ["activate_selected", "reset_to_default"]

    @admin.action(description="Activate the selected weight set (one per workspace)")
    def activate_selected(self, request: HttpRequest, queryset: QuerySet[WeightSet]) -> None:
        actor = request_principal(request)
        chosen = list(queryset.order_by("group_id", "version"))
        per_group = Counter(weight_set.group_id for weight_set in chosen)
        for weight_set in chosen:
            if per_group[weight_set.group_id] > 1:
                self.message_user(
                    request,
                    f"v{weight_set.version} ({weight_set.group_id}): select one weight set per "
                    "workspace; nothing was activated there.",
                    messages.WARNING,
                )
                continue
            self._activate(request, actor, weight_set)

    def _activate(self, request: HttpRequest, actor: Principal, weight_set: WeightSet) -> None:
        try:
            outcome = usecases.weight_set_activate(
                actor=actor, weight_set_id=weight_set.pk, reason=REASON
            )
        except usecases.NeedsConfirmation as doubt:
            self.message_user(
                request,
                format_html(
                    '{} Not activated: confirm it on the <a href="{}">Quality page</a>.',
                    str(doubt),
                    _quality_url(weight_set.group_id),
                ),
                messages.WARNING,
            )
        except PermissionDenied as error:
            self.message_user(request, f"v{weight_set.version}: {error}", messages.ERROR)
        else:
            self.message_user(request, outcome.message, messages.SUCCESS)

    @admin.action(description="Reset the selected sets' workspaces to the default weights (v0)")
    def reset_to_default(self, request: HttpRequest, queryset: QuerySet[WeightSet]) -> None:
        actor = request_principal(request)
        for group_id in sorted(set(queryset.values_list("group_id", flat=True))):
            try:
                message = usecases.weights_reset_default(
                    actor=actor, group_id=group_id, reason=REASON
                )
            except PermissionDenied as error:
                self.message_user(request, f"{group_id}: {error}", messages.ERROR)
            else:
                self.message_user(request, message, messages.SUCCESS)


@admin.register(WeightActivation)
class WeightActivationAdmin(ReadOnlyAdmin):
    """The history of switches between weight sets (None: back to the default)."""

    list_display = ["created_at", "group_id", "weight_set", "previous", "actor_label", "reason"]
    search_fields = ["group_id", "actor_label", "reason"]
    date_hierarchy = "created_at"


@admin.register(CalibrationRun)
class CalibrationRunAdmin(ReadOnlyAdmin):
    """Calibration runs: the samples read and the candidate stored (if any)."""

    list_display = ["started_at", "group_id", "trigger", "status", "helpful", "unhelpful",
                    "candidate", "message"]  # fmt: skip
    list_filter = ["status", "trigger"]
    search_fields = ["group_id", "message"]
    date_hierarchy = "started_at"


class EvaluationResultInline(
    WrittenByServices, admin.TabularInline[EvaluationResult, EvaluationRun]
):
    """Each golden query's outcome, worst first."""

    model = EvaluationResult
    extra = 0
    fields = ("query_text", "ndcg_at_10", "reciprocal_rank", "first_rank", "hit_at_10",
              "claim_ids", "latency_ms")  # fmt: skip
    readonly_fields = fields
    ordering = ("ndcg_at_10", "pk")


@admin.register(EvaluationRun)
class EvaluationRunAdmin(LinkedToQualityAdmin):
    """Golden-set runs: scores overall and per query, what ranked and which embedder."""

    list_display = ["started_at", "group_id", "trigger", "status", "weight_version", "queries",
                    "hit_at_10", "mrr", "ndcg_at_10", "latency_p95_ms", "quality_link"]  # fmt: skip
    list_filter = ["status", "trigger", "embedder_model"]
    search_fields = ["group_id", "message"]
    date_hierarchy = "started_at"
    inlines = [EvaluationResultInline]


class GoldenQueryForm(forms.ModelForm[GoldenQuery]):
    """A golden query; its workspace is chosen once, among those the actor administers."""

    actor: Principal = ANONYMOUS  # bound per request by GoldenQueryAdmin.get_form

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "group_id" in self.fields:  # adding
            workspaces = Scope.objects.filter(
                group_id__in=self.actor.groups_at_least(Role.ADMIN), kind=ScopeKind.WORKSPACE
            ).order_by("name")
            self.fields["group_id"] = forms.ChoiceField(
                label="workspace", choices=[(s.group_id, str(s)) for s in workspaces]
            )
        for name in ("expected_episodes", "expected_texts"):
            if name in self.fields:  # one per line: texts and external ids may hold commas
                self.fields[name] = LinesField(
                    required=False, help_text=self.fields[name].help_text + ", one per line"
                )

    def clean_text(self) -> str:
        text = str(self.cleaned_data["text"]).strip()
        if len(text) > MAX_QUERY_CHARS:
            raise forms.ValidationError(f"a query has at most {MAX_QUERY_CHARS} characters")
        return text

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.instance.pk is not None and "key" in data:  # the workspace is not in the form
            same = GoldenQuery.objects.filter(group_id=self.instance.group_id, key=data["key"])
            if same.exclude(pk=self.instance.pk).exists():
                self.add_error("key", "another golden query of this workspace has this key")
        return data


class LinesField(forms.Field):
    """A list of strings entered one per line; blank lines are dropped."""

    widget = forms.Textarea(attrs={"rows": 3})

    def prepare_value(self, value: Any) -> Any:
        return "\n".join(map(str, value)) if isinstance(value, list | tuple) else value

    def to_python(self, value: Any) -> list[str]:
        return [line.strip() for line in str(value or "").splitlines() if line.strip()]


@admin.register(GoldenQuery)
class GoldenQueryAdmin(admin.ModelAdmin[GoldenQuery]):
    """Golden queries are configuration: added and edited here by the workspace's admins
    (or imported with `manage.py golden_import`). Never deleted, so past runs keep their
    query; untick `enabled` to leave one out of evaluation."""

    form = GoldenQueryForm
    list_display = ["key", "text", "group_id", "enabled", "as_of", "created_at"]
    list_filter = ["enabled"]
    search_fields = ["key", "text", "group_id"]

    def get_readonly_fields(
        self, request: HttpRequest, obj: GoldenQuery | None = None
    ) -> tuple[str, ...]:
        return () if obj is None else ("group_id", "created_at")

    def get_form(
        self,
        request: HttpRequest,
        obj: GoldenQuery | None = None,
        change: bool = False,
        **kwargs: Any,
    ) -> type[forms.ModelForm[GoldenQuery]]:
        form = super().get_form(request, obj, change=change, **kwargs)
        bound = type(form.__name__, (form,), {"actor": request_principal(request)})
        return cast("type[forms.ModelForm[GoldenQuery]]", bound)

    def has_add_permission(self, request: HttpRequest) -> bool:
        administered = request_principal(request).groups_at_least(Role.ADMIN)
        return super().has_add_permission(request) and any(
            group.startswith(f"{ScopeKind.WORKSPACE.value}:") for group in administered
        )

    def has_change_permission(self, request: HttpRequest, obj: GoldenQuery | None = None) -> bool:
        allowed = obj is None or request_principal(request).can(Role.ADMIN, obj.group_id)
        return allowed and super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: GoldenQuery | None = None) -> bool:
        return False  # evaluation results name it; disable it instead

    def save_model(
        self, request: HttpRequest, obj: GoldenQuery, form: forms.ModelForm[GoldenQuery],
        change: bool,
    ) -> None:  # fmt: skip
        """Save, and audit what changed: a golden query decides what 'better' means."""
        super().save_model(request, obj, form, change)
        audit_record(
            actor=request_principal(request),
            group_id=obj.group_id,
            action="golden.update" if change else "golden.create",
            target=("goldenquery", obj.pk),
            data={"key": obj.key, "changed": sorted(form.changed_data)},
        )


# --- Erasure ---------------------------------------------------------------------------


@admin.register(Tombstone)
class TombstoneAdmin(ReadOnlyAdmin):
    """What remains of each erasure: counts and status, no content. A tombstone left
    "retrying" or "failed" shows the store that refused (a failed one waits for its dead
    cleanup job to be retried, under Outbox jobs); the action runs the residual scan."""

    list_display = ["created_at", "kind", "target_id", "group_id", "actor", "reason", "status",
                    "attempts", "last_error"]  # fmt: skip
    list_filter = ["status", "kind"]
    exclude = ["fingerprints", "cleanup"]
    actions = ["verify_selected"]

    @admin.action(description="Verify: scan every store for anything of the erased content")
    def verify_selected(self, request: HttpRequest, queryset: QuerySet[Tombstone]) -> None:
        for tombstone in queryset:
            residue = usecases.erasure_verify(tombstone)
            if residue.clean:
                self.message_user(request, f"{tombstone}: nothing of it remains.", messages.SUCCESS)
            else:
                where = "; ".join(f"{name} ({len(ids)})" for name, ids in residue.found.items())
                self.message_user(request, f"{tombstone}: still found in {where}.", messages.ERROR)


@admin.register(Snapshot)
class SnapshotAdmin(ReadOnlyAdmin):
    """Knowledge snapshots: seal status, pins and notes. Taken on the portal's Snapshots
    page or the API (a maintenance worker builds them); the action re-checks the seal."""

    list_display = ["pk", "name", "group_id", "status", "created_by", "taken_at", "sealed_at",
                    "checksum"]  # fmt: skip
    list_filter = ["status"]
    search_fields = ["name"]
    actions = ["verify_selected"]

    @admin.action(description="Verify: recompute the checksum over the snapshot's content")
    def verify_selected(self, request: HttpRequest, queryset: QuerySet[Snapshot]) -> None:
        for snapshot in queryset:
            if snapshot.status != Snapshot.Status.SEALED:
                self.message_user(request, f"{snapshot}: not sealed.", messages.WARNING)
            elif usecases.snapshot_verify(snapshot):
                self.message_user(request, f"{snapshot}: its content matches its seal.")
            else:
                self.message_user(
                    request, f"{snapshot}: its content no longer matches its seal; searches of "
                    "it are refused.", messages.ERROR,
                )  # fmt: skip
