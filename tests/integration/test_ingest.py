"""Ingestion end to end: Markdown folder -> episodes -> graded, cited claims -> outbox."""

from __future__ import annotations

import datetime as dt
import os
import re
from pathlib import Path

import pytest
from django.db import DatabaseError, transaction
from django.test import Client

from curation.domain.tiers import ClaimStatus
from curation.models import Claim, Episode, EpisodeStatus, OutboxJob, Source
from curation.services.sources import source_create
from curation.usecases import ingest_now
from tenants import rls
from tenants.domain.scopes import ScopeKind
from tenants.services.scopes import personal_scope_ensure
from tests.support.tenancy import Tenant

pytestmark = pytest.mark.django_db

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def _write(root: Path, name: str, text: str | bytes, *, at: dt.datetime = T0) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    os.utime(path, (at.timestamp(), at.timestamp()))
    return path


def _source(tenant: Tenant, root: Path, *, tier: int = 1, origin: str | None = None) -> Source:
    principal = tenant.principal(tenant.admin)
    with rls.tenant_context(principal):
        return source_create(
            actor=principal,
            group_id=tenant.workspace.group_id,
            name=f"docs-{tier}-{origin or 'ws'}",
            kind="markdown",
            config={"root": str(root)},
            trust_tier=tier,
            origin_group_id=origin,
        )


def _claims(tenant: Tenant, **filters: object) -> list[Claim]:
    with rls.tenant_context(tenant.principal(tenant.admin)):
        return list(Claim.objects.filter(**filters).select_related("subject", "object_entity"))


def _episodes(tenant: Tenant) -> list[Episode]:
    with rls.tenant_context(tenant.principal(tenant.admin)):
        return list(Episode.objects.order_by("external_id"))


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    _write(tmp_path, "billing.md", "# Billing\n\nThe billing-api runs on k8s-prod-1.\n")
    _write(tmp_path, "ledger.md", "# Ledger\n\nLedger keeps the double-entry books for Acme.\n")
    return tmp_path


def test_tier1_markdown_publishes_cited_claims(tenant_a: Tenant, docs: Path) -> None:
    source = _source(tenant_a, docs)
    report = ingest_now(source_id=source.pk, group_id=source.group_id)
    assert (report.new, report.failed, report.error) == (2, 0, "")
    runs_on = _claims(tenant_a, predicate="RUNS_ON")
    assert [(c.subject.canonical_name, c.object_entity.canonical_name) for c in runs_on] == [
        ("billing-api", "k8s-prod-1")
    ]
    assert runs_on[0].status == ClaimStatus.PUBLISHED
    assert runs_on[0].authority == 1.0
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        evidence = runs_on[0].evidence.select_related("episode").get()
        assert evidence.episode.external_id == "billing.md"
        assert "runs on" in evidence.snippet
        # every document is citeable: passage-level statements exist for both
        assert {
            c.evidence.get().episode.external_id for c in Claim.objects.filter(predicate="STATES")
        } == {
            "billing.md",
            "ledger.md",
        }


def test_reingesting_unchanged_documents_is_a_no_op(tenant_a: Tenant, docs: Path) -> None:
    source = _source(tenant_a, docs)
    ingest_now(source_id=source.pk, group_id=source.group_id)
    before = (len(_episodes(tenant_a)), len(_claims(tenant_a)))
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        Source.objects.filter(pk=source.pk).update(cursor=None)  # force a full re-read
    again = ingest_now(source_id=source.pk, group_id=source.group_id)
    assert (again.new, again.unchanged) == (0, 2)
    assert (len(_episodes(tenant_a)), len(_claims(tenant_a))) == before


def test_bad_files_fail_alone_with_their_reason(tenant_a: Tenant, docs: Path) -> None:
    _write(docs, "latin1.md", "caf\xe9 au lait".encode("latin-1"))
    _write(docs, "image.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    source = _source(tenant_a, docs)
    report = ingest_now(source_id=source.pk, group_id=source.group_id)
    assert report.new == 2
    failed = {
        e.external_id: e.failure_reason
        for e in _episodes(tenant_a)
        if e.status == EpisodeStatus.FAILED
    }
    assert set(failed) == {"latin1.md", "image.md"}
    assert "UTF-8" in failed["latin1.md"]
    assert "binary" in failed["image.md"].lower() or "NUL" in failed["image.md"]


@pytest.mark.parametrize(
    ("tier", "status"), [(3, ClaimStatus.PENDING_REVIEW), (4, ClaimStatus.PROPOSED)]
)
def test_lower_tiers_wait_for_people(tenant_a: Tenant, docs: Path, tier: int, status: str) -> None:
    source = _source(tenant_a, docs, tier=tier)
    ingest_now(source_id=source.pk, group_id=source.group_id)
    statuses = {c.status for c in _claims(tenant_a)}
    assert statuses == {status}
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        assert not OutboxJob.objects.exists()  # nothing is projected before publication


def test_personal_scope_writing_into_a_workspace_only_proposes(
    tenant_a: Tenant, docs: Path
) -> None:
    personal = personal_scope_ensure(user_id=tenant_a.admin.pk, username="acme-admin")
    assert personal.kind == ScopeKind.PERSONAL
    source = _source(tenant_a, docs, tier=1, origin=personal.group_id)
    ingest_now(source_id=source.pk, group_id=source.group_id)
    claims = _claims(tenant_a)
    assert {c.status for c in claims} == {ClaimStatus.PROPOSED}
    assert "personal scope" in claims[0].status_reason


def test_a_new_value_of_a_functional_predicate_supersedes_with_history(
    tenant_a: Tenant, docs: Path, client: Client
) -> None:
    source = _source(tenant_a, docs)
    ingest_now(source_id=source.pk, group_id=source.group_id)
    later = T0 + dt.timedelta(days=30)
    _write(docs, "billing.md", "# Billing\n\nThe billing-api runs on k8s-prod-2.\n", at=later)
    ingest_now(source_id=source.pk, group_id=source.group_id)
    history = sorted(_claims(tenant_a, predicate="RUNS_ON"), key=lambda c: c.valid_from)
    assert [(c.object_entity.canonical_name, c.status) for c in history] == [
        ("k8s-prod-1", ClaimStatus.SUPERSEDED),
        ("k8s-prod-2", ClaimStatus.PUBLISHED),
    ]
    old, new = history
    assert old.superseded_by_id == new.pk
    assert old.valid_to == new.valid_from == later

    client.force_login(tenant_a.admin)
    now = client.get("/api/v1/claims", {"predicate": "RUNS_ON"}).json()["results"]
    assert [c["object"]["entity"] for c in now] == ["k8s-prod-2"]
    past = (T0 + dt.timedelta(days=1)).isoformat()
    then = client.get("/api/v1/claims", {"predicate": "RUNS_ON", "as_of": past}).json()["results"]
    assert [(c["object"]["entity"], c["status"]) for c in then] == [("k8s-prod-1", "superseded")]
    chain = client.get(f"/api/v1/claims/{new.pk}/history").json()
    assert [c["id"] for c in chain] == [old.pk, new.pk]


def test_published_claims_reach_the_graph_through_the_outbox(tenant_a: Tenant, docs: Path) -> None:
    from curation import bootstrap
    from curation.tasks import process_outbox

    graph = bootstrap.providers().graph()
    graph.clear()
    source = _source(tenant_a, docs)
    ingest_now(source_id=source.pk, group_id=source.group_id)
    published = len(_claims(tenant_a, status=ClaimStatus.PUBLISHED))
    totals = process_outbox()
    assert totals == {"done": 2 * published}  # one job for the graph, one for the index
    assert graph.count_claims() == published
    assert process_outbox() == {}  # nothing is run twice


def test_a_missing_secret_fails_the_run_with_its_reason(tenant_a: Tenant, settings) -> None:
    settings.VERA_SOURCES__SECRET_SCOPES = {
        "VERA_SOURCE_SECRET__TEST_UNSET": [tenant_a.workspace.group_id]
    }
    principal = tenant_a.principal(tenant_a.admin)
    with rls.tenant_context(principal):
        source = source_create(
            actor=principal,
            group_id=tenant_a.workspace.group_id,
            name="wiki",
            kind="confluence",
            config={"base_url": "http://127.0.0.1:9"},
            token_env="VERA_SOURCE_SECRET__TEST_UNSET",
            trust_tier=2,
        )
    report = ingest_now(source_id=source.pk, group_id=source.group_id)
    assert "VERA_SOURCE_SECRET__TEST_UNSET is not set" in report.error
    with rls.tenant_context(principal):
        source.refresh_from_db()
    assert (source.last_run_status, source.last_error) == ("failed", report.error)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"kind": "ftp"}, "unknown connector kind"),
        ({"config": {"root": "/x", "api_token": "s3cret"}}, "looks like a secret"),
        ({"token_env": "not a name"}, "not an environment variable name"),
        ({"trust_tier": 7}, "trust_tier"),
    ],
)
def test_bad_sources_are_refused_with_a_message(
    tenant_a: Tenant, overrides: dict, message: str
) -> None:
    principal = tenant_a.principal(tenant_a.admin)
    fields = {"group_id": tenant_a.workspace.group_id, "name": "x", "kind": "markdown",
              "config": {"root": "/x"}, "trust_tier": 1, **overrides}  # fmt: skip
    with pytest.raises(ValueError, match=message), rls.tenant_context(principal):
        source_create(actor=principal, **fields)


def test_episode_content_cannot_be_rewritten(tenant_a: Tenant, docs: Path) -> None:
    source = _source(tenant_a, docs)
    ingest_now(source_id=source.pk, group_id=source.group_id)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        episode = Episode.objects.first()
        assert episode is not None
        with pytest.raises(DatabaseError, match="Cannot update"), transaction.atomic():
            Episode.objects.filter(pk=episode.pk).update(content_hash="0" * 64)
        Episode.objects.filter(pk=episode.pk).update(
            status=EpisodeStatus.PROCESSED
        )  # status may move


def test_another_tenant_sees_none_of_it_through_the_api(
    tenant_a: Tenant, tenant_b: Tenant, docs: Path, client: Client
) -> None:
    source = _source(tenant_a, docs)
    ingest_now(source_id=source.pk, group_id=source.group_id)
    client.force_login(tenant_b.admin)
    for url in ("/api/v1/claims", "/api/v1/episodes", "/api/v1/sources"):
        response = client.get(url)
        assert response.status_code == 200, url
        assert response.json()["results"] == [], url
    client.force_login(tenant_a.admin)
    assert client.get("/api/v1/claims").json()["count"] > 0


@pytest.mark.parametrize(
    "query",
    [{"as_of": "yesterday"}, {"as_of": "2026-01-01T00:00:00"}, {"colour": "red"}, {"tier": "x"}],
)
def test_claim_filters_reject_bad_input(tenant_a: Tenant, client: Client, query: dict) -> None:
    client.force_login(tenant_a.admin)
    response = client.get("/api/v1/claims", query)
    assert response.status_code == 400
    assert response.json()


def _admin_rows(client: Client, model: str) -> int:
    html = client.get(f"/admin/curation/{model}/").content.decode()
    match = re.search(r'class="paginator">\s*(\d+)', html)
    assert match, f"no changelist for {model}"
    return int(match.group(1))


@pytest.mark.parametrize("model", ["source", "episode", "claim", "entity", "outboxjob"])
def test_even_a_superuser_sees_no_other_tenants_rows_in_the_admin(
    tenant_a: Tenant, tenant_b: Tenant, docs: Path, client: Client, model: str
) -> None:
    source = _source(tenant_b, docs)
    ingest_now(source_id=source.pk, group_id=source.group_id)
    for tenant in (tenant_a, tenant_b):
        tenant.admin.is_staff = tenant.admin.is_superuser = True
        tenant.admin.save()
    client.force_login(tenant_b.admin)
    assert _admin_rows(client, model) > 0  # the rows exist ...
    client.force_login(tenant_a.admin)
    assert _admin_rows(client, model) == 0  # ... and Postgres hides them from A


def test_reingesting_an_artifact_with_an_overlong_id_is_a_no_op(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    deep = tmp_path / ("a" * 200) / ("b" * 200) / ("c" * 200)
    deep.mkdir(parents=True)
    _write(deep, "runbook.md", "# Runbook\n\nThe billing-api runs on k8s-prod-1.\n")
    source = _source(tenant_a, tmp_path)
    assert ingest_now(source_id=source.pk, group_id=source.group_id).new == 1
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        Source.objects.filter(pk=source.pk).update(cursor=None)
    again = ingest_now(source_id=source.pk, group_id=source.group_id)
    assert (again.new, again.unchanged, again.failed) == (0, 1, 0)


def test_a_revision_that_drops_a_fact_supersedes_it_and_keeps_the_rest(
    tenant_a: Tenant, docs: Path
) -> None:
    _write(docs, "payments.md", "# Payments\n\nThe payments-api depends on the ledger-db.\n"
           "The payments-api depends on the fraud-api.\n")  # fmt: skip
    source = _source(tenant_a, docs)
    ingest_now(source_id=source.pk, group_id=source.group_id)
    later = T0 + dt.timedelta(days=3)
    _write(docs, "payments.md", "# Payments\n\nThe payments-api depends on the ledger-db.\n",
           at=later)  # fmt: skip
    ingest_now(source_id=source.pk, group_id=source.group_id)
    depends = {c.object_entity.canonical_name: c for c in _claims(tenant_a, predicate="DEPENDS_ON")}
    dropped, kept = depends["fraud-api"], depends["ledger-db"]
    assert (dropped.status, dropped.status_reason) == (ClaimStatus.SUPERSEDED, "artifact revised")
    assert dropped.valid_to is not None
    assert kept.status == ClaimStatus.PUBLISHED
    assert kept.valid_to is None
