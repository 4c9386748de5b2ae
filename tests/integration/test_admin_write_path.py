"""The admin is an entrypoint like any other: knowledge changes only through the use cases.

Every registered ModelAdmin (and inline) of a knowledge model is walked: for each of its
lifecycle fields (found by name, so a new model or field is covered without being
listed here) the change page of a real row is fetched, its form posted back with that
field altered to a value the admin's own form field would accept, and the row must be
unchanged. A knowledge model registered without a row in the world below fails.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from django import forms
from django.contrib import admin
from django.db import models
from django.http import HttpResponse
from django.test import Client, RequestFactory
from django.utils import timezone

from curation import bootstrap as curation_bootstrap
from curation.admin import SOURCE_SETTINGS
from curation.domain.ontology import PredicateSense
from curation.models import (
    Claim,
    Entity,
    Episode,
    MergeCandidate,
    OutboxPause,
    Predicate,
    Source,
)
from curation.services.ontology import ontology_predicate_set
from curation.services.reprocess import reprocess_start
from curation.services.sources import source_create
from curation.usecases import ingest_now, reprocess_now
from retrieval import bootstrap as retrieval_bootstrap
from retrieval.domain.ranking import DEFAULT_WEIGHTS, Weights
from retrieval.domain.usage import UsageTotal
from retrieval.models import Feedback, GoldenQuery, SearchHit, WeightSet
from retrieval.services.calibration import calibration_run
from retrieval.services.erasure import erase
from retrieval.services.evaluation import evaluation_run, golden_import_jsonl
from retrieval.services.index import index_claims
from retrieval.services.snapshots import Pinning, snapshot_copy, snapshot_take
from retrieval.services.weights import weight_set_activate, weight_set_create
from retrieval.tasks import flush_provider_usage
from tenants import rls
from tenants.domain.access import Principal
from tenants.domain.scopes import Role, ScopeKind
from tenants.models import ApiKey, AuditEvent, Scope
from tenants.selectors import principal_for_user
from tenants.services.scopes import membership_grant, scope_create
from tests.support.tenancy import Tenant
from vera import wiring

pytestmark = pytest.mark.django_db

KNOWLEDGE_APPS = {"tenants", "curation", "retrieval"}

# What a use case owns: lifecycle and grade, resolution pointers, run and outbox state,
# index pins, and who may see a row (group ids, roles, a scope's parent).
LIFECYCLE_NAMES = {
    "status", "status_reason", "valid_from", "valid_to", "tier", "trust_tier",
    "verification", "authority", "confidence", "version", "superseded_by",
    "merged_into", "alias_norm", "method", "score",
    "cursor", "progress", "reach", "claims_count", "failure_reason",
    "attempts", "available_at", "done_at", "consumer", "priority",
    "embedding_model", "dimension", "model",
    "group_id", "origin_group_id", "role", "role_ceiling", "parent", "revoked_at",
    "helpful", "rank",
}  # fmt: skip
LIFECYCLE_PREFIXES = ("reviewed_", "last_")
LIFECYCLE_SUFFIXES = ("_at",)
# The one admin form that saves: Source settings go through source_create/source_update
# (role, allow-lists, audit), proven below by their audit events.
SAVED_BY_A_USE_CASE = {(Source, name) for name in SOURCE_SETTINGS}
# Only a source can be added by hand, and only through source_create, and a predicate's
# sense only through ontology_predicate_set; golden queries are configuration (their
# workspace is chosen once, among those the user administers).
ADDABLE = {Source, Predicate, GoldenQuery}


def is_lifecycle(field: models.Field) -> bool:
    name = field.name
    return (
        name in LIFECYCLE_NAMES
        or name.startswith(LIFECYCLE_PREFIXES)
        or name.endswith(LIFECYCLE_SUFFIXES)
    )


def knowledge_admins() -> list[tuple[type[models.Model], admin.ModelAdmin]]:
    return sorted(
        (
            (model, model_admin)
            for model, model_admin in admin.site._registry.items()
            if model._meta.app_label in KNOWLEDGE_APPS
        ),
        key=lambda pair: pair[0]._meta.label,
    )


@dataclass(frozen=True)
class Case:
    """One lifecycle field of one admin page, on the page's model or one of its inlines."""

    page: type[models.Model]
    model: type[models.Model]
    field: str

    def __str__(self) -> str:
        inline = "" if self.model is self.page else f">{self.model._meta.model_name}"
        return f"{self.page._meta.label_lower}{inline}.{self.field}"


def lifecycle_cases() -> list[Case]:
    """Every editable lifecycle field of every knowledge admin page and its inlines."""
    cases = []
    for page, model_admin in knowledge_admins():
        for model in [page, *(inline.model for inline in model_admin.inlines)]:
            cases += [
                Case(page, model, field.name)
                for field in model._meta.concrete_fields
                if field.editable
                and not field.primary_key
                and is_lifecycle(field)
                and (model, field.name) not in SAVED_BY_A_USE_CASE
            ]
    return cases


# --- a world with a row of every knowledge model -----------------------------------------


@dataclass
class World:
    tenant: Tenant
    other_workspace: Scope  # a second scope the admin administers: RLS allows a move there

    @property
    def principal(self) -> Principal:
        admin_user = self.tenant.admin
        return principal_for_user(admin_user.pk, label=f"user:{admin_user.get_username()}")


@pytest.fixture
def world(tenant_a: Tenant, tmp_path: Path, client: Client) -> World:
    """Ingested documents (sources, episodes, claims, evidence, entities, aliases, outbox
    jobs) read again by a reprocessing run, an index, a search hit with a vote, a merge
    candidate, an API key, audit events, and the learning loop (a golden query, a
    calibration run, an active weight set, an evaluation with its per-query result)."""
    (tmp_path / "billing.md").write_text("# Billing\n\nThe billing-api runs on k8s-prod-1.\n")
    (tmp_path / "gone.md").write_text("# Gone\n\nThe gone-api runs on k8s-gone-1.\n")
    other = scope_create(
        kind=ScopeKind.WORKSPACE, name="Acme WS 2", parent_id=tenant_a.workspace.parent_id
    )
    membership_grant(user_id=tenant_a.admin.pk, scope_id=other.pk, role=Role.ADMIN)
    world = World(tenant_a, other)
    with rls.tenant_context(world.principal):
        source = source_create(
            actor=world.principal, group_id=tenant_a.workspace.group_id, name="docs",
            kind="markdown", config={"root": str(tmp_path)}, trust_tier=1,
        )  # fmt: skip
    ingest_now(source_id=source.pk, group_id=source.group_id)
    with rls.tenant_context(world.principal):  # a reprocessing run, read to its end
        run = reprocess_start(
            actor=world.principal, source_id=source.pk, everything=True,
            adapters=curation_bootstrap.providers().read_adapters_for(source),
        )  # fmt: skip
    reprocess_now(run_id=run.pk, group_id=source.group_id)
    tenant_a.issue_key(owner=tenant_a.viewer)
    with rls.tenant_context(world.principal):
        claim_ids = list(Claim.objects.order_by("pk").values_list("pk", flat=True))
        index_claims(claim_ids=claim_ids, embedder=retrieval_bootstrap.providers().embedder())
        # The hit and its vote are on a claim the erasure below leaves (gone.md's go).
        kept = Claim.objects.exclude(evidence__episode__external_id="gone.md").order_by("pk")
        kept_id = kept.values_list("pk", flat=True)[0]
        entities = list(Entity.objects.order_by("pk")[:2])
        group_id = tenant_a.workspace.group_id
        MergeCandidate.objects.create(
            group_id=group_id, entity=entities[0], candidate=entities[1], method="semantic",
            score=0.85,
        )  # fmt: skip
        hit = SearchHit.objects.create(
            group_id=group_id, query_id="00000000-0000-0000-0000-000000000001",
            query_text="billing", claim_id=kept_id, rank=1, score=0.5, signals={},
            user=tenant_a.viewer,
        )  # fmt: skip
        Feedback.objects.create(
            group_id=group_id, hit=hit, claim_id=kept_id, helpful=True,
            user=tenant_a.viewer,
        )  # fmt: skip
        _learning_loop(world, group_id)
        OutboxPause.objects.create(group_id=group_id, consumer="graph", reason="graph rebuild")
        ontology_predicate_set(  # a predicate's own sense, and the ontology's version
            actor=world.principal, group_id=group_id,
            sense=PredicateSense(name="RUNS_ON", label="is served from", words=("served",)),
        )  # fmt: skip
        snapshot = snapshot_take(actor=world.principal, group_id=group_id, name="audit")
        snapshot_copy(snapshot.pk, Pinning(catalog=retrieval_bootstrap.providers().embedders(),
                                           reranking=None, fusion={}))  # fmt: skip
        erase(  # a tombstone
            actor=world.principal, kind="episode",
            target_id=Episode.objects.get(external_id="gone.md").pk, reason="test",
            confirm=True, catalog=retrieval_bootstrap.providers().embedders(),
        )  # fmt: skip
    wiring.usage_ledger().add(  # a day of provider usage, flushed as beat does
        UsageTotal(group_id=tenant_a.workspace.group_id, day=timezone.now().date(),
                   provider="openai", model="text-embedding-3-small", calls=1, tokens=8,
                   cost_usd=0.00000016)
    )  # fmt: skip
    flush_provider_usage()
    tenant_a.admin.is_staff = tenant_a.admin.is_superuser = True
    tenant_a.admin.save()
    client.force_login(tenant_a.admin)
    return world


def _learning_loop(world: World, group_id: str) -> None:
    """A golden query, a calibration run, a weight set with its activation, an evaluation."""
    golden_import_jsonl(
        group_id=group_id,
        lines=['{"key": "billing", "query": "billing-api", "expected_texts": ["k8s-prod-1"]}'],
    )
    # One vote has no signal vector: the run is recorded with too few samples.
    calibration_run(actor=world.principal, group_id=group_id, now=timezone.now(), trigger="test")
    weights = Weights.from_mapping({**DEFAULT_WEIGHTS.as_dict(), "relevance": 0.6})
    chosen = weight_set_create(group_id=group_id, weights=weights, origin="manual")
    weight_set_activate(actor=world.principal, weight_set_id=chosen.pk, confirm=True)
    evaluation_run(
        actor=world.principal, group_id=group_id, search=retrieval_bootstrap.search(),
        embedder_model="hashing", now=timezone.now(), trigger="test",
    )  # fmt: skip


def a_row(world: World, model: type[models.Model]) -> models.Model:
    """A real row of the model, visible to the admin (the workspace, for scopes)."""
    if model is Scope:
        return world.tenant.workspace
    with rls.tenant_context(world.principal):
        row = model._default_manager.order_by("pk").first()
    assert row is not None, f"the world has no {model._meta.label}: add one to cover its admin"
    return row


def stored(world: World, model: type[models.Model], pk: object, field: str) -> object:
    attname = model._meta.get_field(field).attname
    with rls.tenant_context(world.principal):
        return model._default_manager.values_list(attname, flat=True).get(pk=pk)


# --- the admin's form, as a browser would post it back -----------------------------------


class PostedForm(HTMLParser):
    """The values a browser posts from the form with `form_id` (name -> values)."""

    def __init__(self, form_id: str) -> None:
        super().__init__()
        self.form_id = form_id
        self.inside = False
        self.data: dict[str, list[str]] = {}
        self._select: str | None = None
        self._first_option: str | None = None
        self._textarea: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {key: value or "" for key, value in attrs}
        if tag == "form":
            self.inside = a.get("id") == self.form_id
        elif not self.inside or ("name" not in a and tag != "option") or "disabled" in a:
            return
        elif tag == "input":
            kind = a.get("type", "text").lower()
            if kind in {"submit", "button", "image", "reset", "file"}:
                return
            if kind in {"checkbox", "radio"} and "checked" not in a:
                return
            default = "on" if kind in {"checkbox", "radio"} else ""
            self.data.setdefault(a["name"], []).append(a.get("value", default))
        elif tag == "select":
            self._select, self._first_option = a["name"], None
        elif tag == "option" and self._select is not None:
            value = a.get("value", "")
            self._first_option = value if self._first_option is None else self._first_option
            if "selected" in a:
                self.data.setdefault(self._select, []).append(value)
        elif tag == "textarea":
            self._textarea = a["name"]
            self.data[self._textarea] = [""]

    def handle_data(self, data: str) -> None:
        if self._textarea is not None:
            self.data[self._textarea][-1] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self.inside = False
        elif tag == "select" and self._select is not None:
            if self._select not in self.data and self._first_option is not None:
                self.data[self._select] = [self._first_option]  # what a browser sends
            self._select = None
        elif tag == "textarea" and self._textarea is not None:
            value = self.data[self._textarea][-1]
            self.data[self._textarea][-1] = value.removeprefix("\n")  # HTML drops it
            self._textarea = None


def posted_form(html: str, model: type[models.Model]) -> dict[str, list[str]]:
    parser = PostedForm(f"{model._meta.model_name}_form")
    parser.feed(html)
    return parser.data


def change_url(model: type[models.Model], pk: object) -> str:
    return f"/admin/{model._meta.app_label}/{model._meta.model_name}/{pk}/change/"


# --- an altered value the admin's own form field would accept ----------------------------


def altered(world: World, row: models.Model, field: models.Field) -> Any:
    current = getattr(row, field.attname)
    if field.name in {"group_id", "origin_group_id"}:
        return world.other_workspace.group_id
    if field.is_relation:
        with rls.tenant_context(world.principal):
            other = (
                field.related_model._default_manager.exclude(pk__in=[current, row.pk])
                .order_by("pk")
                .first()
            )
        assert other is not None, f"the world has no second {field.related_model._meta.label}"
        return other
    if field.choices:
        return next(value for value, _ in field.flatchoices if value not in {current, ""})
    if isinstance(field, models.BooleanField):
        return not current
    if isinstance(field, models.IntegerField):
        return (current or 0) + 1
    if isinstance(field, models.FloatField):
        return current - 0.25 if current and current > 0.5 else (current or 0) + 0.25
    if isinstance(field, models.DateTimeField):
        # An earlier start keeps a valid interval valid; anything else moves a day later.
        shift = dt.timedelta(days=-1 if field.name == "valid_from" else 1)
        return (current or timezone.now()) + shift
    if isinstance(field, models.JSONField):
        return {**(current or {}), "edited": True}
    if isinstance(field, models.CharField | models.TextField):
        return (current or "") + "~"
    raise AssertionError(f"no altered value for {field!r}: extend altered()")


def raw_values(formfield: forms.Field, name: str, value: Any) -> dict[str, str | None]:
    """What a browser posts for `value` in this form field (None: the key is absent)."""
    widget = formfield.widget
    if isinstance(widget, forms.MultiWidget):
        parts = widget.decompress(value)
        return {
            f"{name}{suffix}": sub.format_value(part)
            for suffix, sub, part in zip(widget.widgets_names, widget.widgets, parts, strict=True)
        }
    if isinstance(widget, forms.CheckboxInput):
        return {name: "on" if value else None}
    prepared = formfield.prepare_value(value)
    return {name: "" if prepared is None else str(prepared)}


def admin_formfield(world: World, case: Case) -> forms.Field:
    """The form field the admin would render for the field if it were editable."""
    page_admin = admin.site._registry[case.page]
    model_admin = next(
        (i(case.page, admin.site) for i in page_admin.inlines if i.model is case.model),
        page_admin,
    )
    request = RequestFactory().get("/admin/")
    request.user = world.tenant.admin
    formfield = model_admin.formfield_for_dbfield(
        case.model._meta.get_field(case.field), request=request
    )
    assert formfield is not None
    return formfield


def post_back(
    client: Client, page_model: type[models.Model], pk: object, changes: dict[str, str | None]
) -> HttpResponse:
    """GET a change page and post its form back with `changes` (a 500 would raise here)."""
    url = change_url(page_model, pk)
    page = client.get(url)
    assert page.status_code == 200, f"{url}: {page.status_code}"
    data = posted_form(page.content.decode(), page_model)
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = [value]
    data["_save"] = ["Save"]
    return client.post(url, data)


def inline_prefix_and_row(
    html: str, page_model: type[models.Model], model: type[models.Model]
) -> tuple[str, str]:
    """The inline formset's prefix for `model` and the pk shown in its first row."""
    data = posted_form(html, page_model)
    for key, values in data.items():
        if match := re.fullmatch(r"(.+)-0-id", key):
            prefix = match.group(1)
            related = page_model._meta.get_field(prefix).related_model if prefix else None
            if related is model:
                return prefix, values[0]
    raise AssertionError(f"no {model._meta.label} row in the {page_model._meta.label} page")


# --- the write path ------------------------------------------------------------------------


@pytest.mark.parametrize("case", lifecycle_cases(), ids=str)
def test_no_lifecycle_field_changes_through_an_admin_form(
    world: World, client: Client, case: Case
) -> None:
    page_row = a_row(world, case.page)
    field = case.model._meta.get_field(case.field)
    key = case.field
    row = page_row
    if case.model is not case.page:
        html = client.get(change_url(case.page, page_row.pk)).content.decode()
        prefix, row_pk = inline_prefix_and_row(html, case.page, case.model)
        with rls.tenant_context(world.principal):
            row = case.model._default_manager.get(pk=row_pk)
        key = f"{prefix}-0-{case.field}"
    before = stored(world, case.model, row.pk, case.field)
    value = altered(world, row, field)
    formfield = admin_formfield(world, case)
    raw = raw_values(formfield, key, value)
    # The posted value is one the admin's form would accept: were the field editable,
    # this test would see the row change.
    as_posted = {k.replace(key, case.field, 1): v for k, v in raw.items() if v is not None}
    with rls.tenant_context(world.principal):
        cleaned = formfield.clean(formfield.widget.value_from_datadict(as_posted, {}, case.field))
    assert getattr(cleaned, "pk", cleaned) != before

    response = post_back(client, case.page, page_row.pk, raw)

    # Saved (the form ignored the field) or refused outright; a form redisplayed with
    # errors (200) would prove nothing.
    assert response.status_code in {302, 403}
    assert stored(world, case.model, row.pk, case.field) == before


def test_every_knowledge_admin_is_walked() -> None:
    walked = {case.page for case in lifecycle_cases()}
    registered = {model for model, _ in knowledge_admins()}
    assert registered - walked == set(), "a knowledge admin without a lifecycle field?"


@pytest.mark.parametrize(
    "model", [m for m, _ in knowledge_admins() if m not in ADDABLE], ids=lambda m: m._meta.label
)
def test_add_page_is_refused_when_a_service_is_the_only_way_in(
    world: World, client: Client, model: type[models.Model]
) -> None:
    response = client.get(f"/admin/{model._meta.app_label}/{model._meta.model_name}/add/")
    assert response.status_code == 403


@pytest.mark.parametrize("model", [m for m, _ in knowledge_admins()], ids=lambda m: m._meta.label)
def test_delete_page_is_refused_for_knowledge(
    world: World, client: Client, model: type[models.Model]
) -> None:
    row = a_row(world, model)
    url = f"/admin/{model._meta.app_label}/{model._meta.model_name}/{row.pk}/delete/"
    assert client.post(url, {"post": "yes"}).status_code == 403
    with rls.tenant_context(world.principal):
        assert model._default_manager.filter(pk=row.pk).exists()


# --- the Source form saves through the source use cases ----------------------------------


def _source(world: World) -> Source:
    with rls.tenant_context(world.principal):
        return Source.objects.get(name="docs")


def _audited(world: World, action: str) -> list[AuditEvent]:
    with rls.tenant_context(world.principal):
        return list(AuditEvent.objects.filter(action=action))


def test_source_settings_saved_in_the_admin_go_through_source_update(
    world: World, client: Client
) -> None:
    source = _source(world)
    response = post_back(client, Source, source.pk, {"name": "handbook", "trust_tier": "2"})
    assert response.status_code == 302
    assert stored(world, Source, source.pk, "name") == "handbook"
    assert stored(world, Source, source.pk, "trust_tier") == 2
    [event] = _audited(world, "source.update")
    assert event.data == {"changed": ["name", "trust_tier"]}


def test_source_form_shows_the_services_refusal_when_config_holds_a_secret(
    world: World, client: Client
) -> None:
    source = _source(world)
    config = json.dumps({**source.config, "api_token": "s3cret"})
    response = post_back(client, Source, source.pk, {"config": config})
    assert response.status_code == 200
    assert "looks like a secret" in response.content.decode()
    assert stored(world, Source, source.pk, "config") == source.config
    assert _audited(world, "source.update") == []


def test_source_rename_onto_another_source_is_a_form_error(
    world: World, client: Client, tmp_path: Path
) -> None:
    with rls.tenant_context(world.principal):
        source_create(
            actor=world.principal, group_id=world.tenant.workspace.group_id, name="wiki",
            kind="markdown", config={"root": str(tmp_path)}, trust_tier=2,
        )  # fmt: skip
    source = _source(world)
    response = post_back(client, Source, source.pk, {"name": "wiki"})
    assert "another source of this scope has this name" in response.content.decode()
    assert stored(world, Source, source.pk, "name") == "docs"


def _add_form(client: Client) -> dict[str, list[str]]:
    page = client.get("/admin/curation/source/add/")
    assert page.status_code == 200
    return posted_form(page.content.decode(), Source)


def test_source_added_in_the_admin_goes_through_source_create(
    world: World, client: Client, tmp_path: Path
) -> None:
    data = _add_form(client)
    data.update(
        name=["wiki"], kind=["markdown"], config=[json.dumps({"root": str(tmp_path)})],
        trust_tier=["2"], group_id=[world.other_workspace.group_id],
    )  # fmt: skip
    assert client.post("/admin/curation/source/add/", data).status_code == 302
    with rls.tenant_context(world.principal):
        added = Source.objects.get(name="wiki")
    assert (added.group_id, added.trust_tier) == (world.other_workspace.group_id, 2)
    [event] = [e for e in _audited(world, "source.create") if e.target_id == str(added.pk)]
    assert event.group_id == world.other_workspace.group_id


def test_source_add_outside_the_allowed_file_roots_is_a_form_error(
    world: World, client: Client
) -> None:
    data = _add_form(client)
    data.update(
        name=["etc"], kind=["markdown"], config=[json.dumps({"root": "/etc"})],
        trust_tier=["2"], group_id=[world.tenant.workspace.group_id],
    )  # fmt: skip
    response = client.post("/admin/curation/source/add/", data)
    assert response.status_code == 200
    assert "errornote" in response.content.decode()
    with rls.tenant_context(world.principal):
        assert not Source.objects.filter(name="etc").exists()


def test_source_add_offers_only_scopes_the_user_administers(
    world: World, client: Client, tenant_b: Tenant
) -> None:
    html = client.get("/admin/curation/source/add/").content.decode()
    assert world.other_workspace.group_id in html
    assert tenant_b.workspace.group_id not in html


def test_source_page_shows_the_run_progress_and_the_outbox_lanes(
    world: World, client: Client
) -> None:
    html = client.get(change_url(Source, _source(world).pk)).content.decode()
    assert re.search(r"finished: \d+ records, [\d.]+ records/s", html)
    assert re.search(r"graph: \d+ pending \(\d+ urgent\), \d+ dead", html)
    assert re.search(r"index: \d+ pending", html)


# --- actions call the use cases ------------------------------------------------------------


def _action(client: Client, model: type[models.Model], action: str, pks: list[object]) -> None:
    url = f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
    response = client.post(url, {"action": action, "_selected_action": pks})
    assert response.status_code == 302


@pytest.mark.parametrize(
    ("action", "status", "audited"),
    [("merge_selected", "merged", "entity.merge"), ("keep_apart_selected", "kept_apart",
                                                   "entity.keep_apart")],
)  # fmt: skip
def test_merge_candidates_are_decided_by_actions_through_candidate_decide(
    world: World, client: Client, action: str, status: str, audited: str
) -> None:
    candidate = a_row(world, MergeCandidate)
    _action(client, MergeCandidate, action, [candidate.pk])
    assert stored(world, MergeCandidate, candidate.pk, "status") == status
    assert [e.target_id for e in _audited(world, audited)] == [str(candidate.entity_id)]


def test_unmerge_action_goes_through_entity_unmerge(world: World, client: Client) -> None:
    candidate = a_row(world, MergeCandidate)
    _action(client, MergeCandidate, "merge_selected", [candidate.pk])
    _action(client, Entity, "unmerge_selected", [candidate.entity_id])
    assert stored(world, Entity, candidate.entity_id, "merged_into") is None
    assert len(_audited(world, "entity.unmerge")) == 1


def test_revoke_action_goes_through_api_key_revoke(world: World, client: Client) -> None:
    key = a_row(world, ApiKey)
    _action(client, ApiKey, "revoke_selected", [key.pk])
    assert stored(world, ApiKey, key.pk, "revoked_at") is not None
    assert [e.target_id for e in _audited(world, "api_key.revoke")] == [key.prefix]


def test_action_refusals_are_reported_not_raised(world: World, client: Client) -> None:
    viewer = world.tenant.viewer
    viewer.is_staff = viewer.is_superuser = True
    viewer.save()
    client.force_login(viewer)
    candidate = a_row(world, MergeCandidate)
    url = "/admin/curation/mergecandidate/"
    response = client.post(
        url, {"action": "merge_selected", "_selected_action": [candidate.pk]}, follow=True
    )
    assert "1 refused" in response.content.decode()
    assert stored(world, MergeCandidate, candidate.pk, "status") == "open"


# --- the learning loop: weight sets switch through the weights use cases ---------------------


def _messages_after(client: Client, model: type[models.Model], action: str, pks: list) -> str:
    _action(client, model, action, pks)
    return client.get(f"/admin/{model._meta.app_label}/{model._meta.model_name}/").content.decode()


def _new_weight_set(world: World, *, evaluated: bool) -> WeightSet:
    """A second set with the active set's weights (so an evaluation scores it the same)."""
    group_id = world.tenant.workspace.group_id
    with rls.tenant_context(world.principal):
        weights = Weights.from_mapping({**DEFAULT_WEIGHTS.as_dict(), "relevance": 0.6})
        chosen = weight_set_create(group_id=group_id, weights=weights, origin="manual")
    if evaluated:
        evaluation_run(
            actor=world.principal, group_id=group_id, search=retrieval_bootstrap.search(),
            embedder_model="hashing", now=timezone.now(), trigger="test",
            weight_set_id=chosen.pk,
        )  # fmt: skip
    return chosen


def test_activate_action_goes_through_weight_set_activate(world: World, client: Client) -> None:
    chosen = _new_weight_set(world, evaluated=True)
    html = _messages_after(client, WeightSet, "activate_selected", [chosen.pk])
    assert "Weights v2 are active (were v1)." in html
    assert stored(world, WeightSet, chosen.pk, "active") is True
    assert str(chosen.pk) in {e.target_id for e in _audited(world, "weights.activate")}


def test_activate_action_refuses_with_the_reason_when_the_golden_set_doubts(
    world: World, client: Client
) -> None:
    chosen = _new_weight_set(world, evaluated=False)
    html = _messages_after(client, WeightSet, "activate_selected", [chosen.pk])
    assert "Weights v2 have not been evaluated on the golden set" in html
    assert (
        f'confirm it on the <a href="/quality/?group={chosen.group_id.replace(":", "%3A")}"' in html
    )
    assert stored(world, WeightSet, chosen.pk, "active") is False


def test_reset_action_goes_through_weights_reset_default(world: World, client: Client) -> None:
    active = a_row(world, WeightSet)
    html = _messages_after(client, WeightSet, "reset_to_default", [active.pk])
    assert "The built-in default weights (v0) are in use (were v1)." in html
    assert stored(world, WeightSet, active.pk, "active") is False
    assert len(_audited(world, "weights.reset_default")) == 1


def test_weight_set_changelist_links_to_the_quality_page(world: World, client: Client) -> None:
    html = client.get("/admin/retrieval/weightset/").content.decode()
    assert '<a href="/quality/">Quality page' in html


# --- golden queries are configuration, added in a workspace the user administers -------------


def test_golden_query_added_in_the_admin_keeps_one_expected_text_per_line(
    world: World, client: Client
) -> None:
    page = client.get("/admin/retrieval/goldenquery/add/")
    data = posted_form(page.content.decode(), GoldenQuery)
    data.update(
        group_id=[world.other_workspace.group_id], key=["ledger"], text=["  ledger-db  "],
        expected_texts=["books, double-entry\r\nledger-db\r\n"], enabled=["on"],
    )  # fmt: skip
    assert client.post("/admin/retrieval/goldenquery/add/", data).status_code == 302
    with rls.tenant_context(world.principal):
        added = GoldenQuery.objects.get(key="ledger")
        audit = AuditEvent.objects.get(action="golden.create", target_id=str(added.pk))
    assert (added.group_id, added.text) == (world.other_workspace.group_id, "ledger-db")
    assert added.expected_texts == ["books, double-entry", "ledger-db"]
    assert audit.data["key"] == "ledger"


def test_golden_query_add_offers_only_workspaces_the_user_administers(
    world: World, client: Client, tenant_b: Tenant
) -> None:
    html = client.get("/admin/retrieval/goldenquery/add/").content.decode()
    assert world.other_workspace.group_id in html
    assert tenant_b.workspace.group_id not in html
    assert world.tenant.org.group_id not in html  # golden sets belong to workspaces


def test_scopes_are_renamed_and_archived_in_the_admin_through_the_scope_use_cases(
    world: World, client: Client, tenant_a: Tenant
) -> None:
    workspace = tenant_a.workspace
    # The workspace's own admin (a superuser here) is not its organisation's: refused.
    _action(client, Scope, "archive_selected", [workspace.pk])
    workspace.refresh_from_db()
    assert workspace.archived_at is None
    membership_grant(user_id=tenant_a.admin.pk, scope_id=tenant_a.org.pk, role=Role.ADMIN)
    _action(client, Scope, "archive_selected", [workspace.pk])
    workspace.refresh_from_db()
    assert workspace.archived_at is not None
    _action(client, Scope, "restore_selected", [workspace.pk])
    workspace.refresh_from_db()
    assert workspace.archived_at is None
    url = f"/admin/tenants/scope/{workspace.pk}/change/"
    response = client.post(url, {"name": "Renamed in the admin", "search_limit": "",
                                 "write_limit": "", "principal_search_limit": "",
                                 "principal_write_limit": "", "memberships-TOTAL_FORMS": "0",
                                 "memberships-INITIAL_FORMS": "0"})  # fmt: skip
    assert response.status_code == 302, response.content.decode()[:3000]
    workspace.refresh_from_db()
    assert workspace.name == "Renamed in the admin"
    actions = {event.action for event in _audited(world, "scope.rename")}
    actions |= {event.action for event in _audited(world, "scope.archive")}
    assert actions == {"scope.rename", "scope.archive"}
