"""Reprocessing: stored documents read again through today's extractors.

Real CMDB exports are ingested through the real pipeline; then the source's mapping
changes (a column no longer read, a new column read) and the source is reprocessed
from the stored bytes and fields: claims extracted again are kept (their reviews
stand), new ones go through the tier rules, vanished ones are withdrawn with their
reason or, when a reviewer approved them, queued for a re-check; the graph and the
index equal a rebuild. A `manage.py reprocess` killed (SIGKILL) mid-run and run
again ends exactly where an uninterrupted run ends.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from curation import bootstrap
from curation.domain.extraction.base import extraction_version
from curation.domain.tiers import ClaimStatus
from curation.models import Claim, Episode, Reprocessing, Source
from curation.services.projection import graph_rebuild
from curation.services.reprocess import ReprocessRefused, reprocess_start
from curation.services.review import review_approve
from curation.services.sources import source_create
from curation.tasks import process_outbox
from curation.usecases import ingest_now, reprocess_now
from retrieval import bootstrap as retrieval_bootstrap
from retrieval.models import SearchDocument
from retrieval.services.index import index_rebuild
from tenants import rls
from tenants.models import AuditEvent
from tenants.selectors import principal_system
from tests.support.ingest import ingest_markdown
from tests.support.tenancy import Tenant

ROOT = Path(__file__).resolve().parents[2]

EXPORT = (
    "id,name,owner,runs_on,language,region\n"
    "CI001,billing-api,payments-team,k8s-prod-1,go,eu-west-1\n"
    "CI002,ledger-db,ledger-team,k8s-prod-2,rust,eu-west-2\n"
)
# Today's reading: the language column is no longer read, the region is.
NEW_MAPPING = {"language": "", "region": "HOSTED_IN"}


def _source(tenant: Tenant, export: Path, *, tier: int, name: str) -> Source:
    export.write_text(EXPORT, encoding="utf-8")
    principal = tenant.principal(tenant.admin)
    with rls.tenant_context(principal):
        source = source_create(
            actor=principal, group_id=tenant.workspace.group_id, name=name, kind="cmdb",
            config={"path": str(export)}, trust_tier=tier,
        )  # fmt: skip
    report = ingest_now(source_id=source.pk, group_id=source.group_id)
    assert not report.error, report.error
    return source


def _remap(tenant: Tenant, source: Source) -> None:
    with rls.tenant_context(tenant.principal(tenant.admin)):
        Source.objects.filter(pk=source.pk).update(config={**source.config, "mapping": NEW_MAPPING})


def _claims(tenant: Tenant, source: Source) -> dict[tuple[str, str, str], Claim]:
    with rls.tenant_context(tenant.principal(tenant.admin)):
        rows = Claim.objects.filter(source=source).select_related("subject", "object_entity")
        return {
            (c.subject.canonical_name, c.predicate, c.object_literal or str(c.object_entity)): c
            for c in rows
        }


def _reprocess(tenant: Tenant, source: Source, **options: Any) -> Reprocessing:
    principal = tenant.principal(tenant.admin)
    with rls.tenant_context(principal):
        source.refresh_from_db()
        adapters = bootstrap.providers().read_adapters_for(source)
        run = reprocess_start(actor=principal, source_id=source.pk, adapters=adapters, **options)
    return reprocess_now(run_id=run.pk, group_id=source.group_id)


def _drain() -> None:
    while process_outbox():
        pass


def _projections_match_a_rebuild(group_id: str) -> None:
    graph = bootstrap.providers().graph()
    projected = graph.dump(group_id)
    system = principal_system("test", group_ids=[group_id])
    with rls.tenant_context(system):
        indexed = set(SearchDocument.objects.values_list("claim_id", "status", "text"))
        graph_rebuild(graph=graph, group_ids=[group_id])
        index_rebuild(embedder=retrieval_bootstrap.providers().embedder())
        assert set(SearchDocument.objects.values_list("claim_id", "status", "text")) == indexed
    assert graph.dump(group_id) == projected


@pytest.mark.django_db
def test_reprocessing_applies_a_new_mapping_to_stored_documents(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    group_id = tenant_a.workspace.group_id
    auto = _source(tenant_a, tmp_path / "auto.csv", tier=1, name="cmdb")
    _drain()
    before = _claims(tenant_a, auto)
    assert ("billing-api", "WRITTEN_IN", "go") in before
    assert not any(p == "HOSTED_IN" for _, p, _ in before)

    _remap(tenant_a, auto)
    run = _reprocess(tenant_a, auto, reason="language is no longer the CMDB's to say")
    _drain()

    assert (run.status, run.total, run.counts["documents"]) == ("finished", 2, 2)
    after = _claims(tenant_a, auto)
    # Extracted again: the very same claims, untouched.
    for key in [k for k in before if k[1] in ("OWNED_BY", "RUNS_ON")]:
        assert after[key].pk == before[key].pk
        assert (after[key].status, after[key].version) == (ClaimStatus.PUBLISHED, 1)
    # No longer extracted (and no one approved them): withdrawn, with the reason.
    gone = after[("billing-api", "WRITTEN_IN", "go")]
    assert gone.status == ClaimStatus.RETRACTED
    assert "no longer found in its document when read again" in gone.status_reason
    # New: through the tier rules (tier 1: published at once).
    assert after[("billing-api", "HOSTED_IN", "eu-west-1")].status == ClaimStatus.PUBLISHED
    assert run.counts["kept"] == 4
    assert run.counts["withdrawn"] == 2
    assert run.counts["new published"] == 2
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        versions = set(
            Episode.objects.filter(source=auto).values_list("extractor_version", flat=True)
        )
        adapters = bootstrap.providers().read_adapters_for(Source.objects.get(pk=auto.pk))
        assert versions == {run.version} == {extraction_version(adapters.extractors)}
        actions = list(
            AuditEvent.objects.filter(action__startswith="source.reprocess")
            .order_by("pk")
            .values_list("action", flat=True)
        )
    assert actions == ["source.reprocess", "source.reprocess_finished"]
    _projections_match_a_rebuild(group_id)

    # Idempotent: a second run finds nothing read by an older version and changes nothing.
    again = _reprocess(tenant_a, auto)
    assert (again.status, again.total, again.counts["documents"]) == ("finished", 0, 0)
    assert {k: (c.pk, c.status, c.version) for k, c in _claims(tenant_a, auto).items()} == {
        k: (c.pk, c.status, c.version) for k, c in after.items()
    }


@pytest.mark.django_db
def test_reviewed_claims_stand_and_vanished_ones_are_queued_for_a_recheck(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    reviewed = _source(tenant_a, tmp_path / "review.csv", tier=3, name="cmdb-review")
    before = _claims(tenant_a, reviewed)
    assert {c.status for c in before.values()} == {ClaimStatus.PENDING_REVIEW}
    approve = [("billing-api", "WRITTEN_IN", "go"), ("billing-api", "OWNED_BY", "payments-team")]
    reviewer = tenant_a.principal(tenant_a.reviewer)
    with rls.tenant_context(reviewer):
        for key in approve:
            review_approve(actor=reviewer, claim_id=before[key].pk, version=before[key].version)
    _drain()

    _remap(tenant_a, reviewed)
    run = _reprocess(tenant_a, reviewed)
    _drain()
    after = _claims(tenant_a, reviewed)

    # Approved and still extracted: kept as the reviewer left it.
    owned = after[("billing-api", "OWNED_BY", "payments-team")]
    assert (owned.status, owned.recheck) == (ClaimStatus.PUBLISHED, "")
    assert owned.reviewed_by_id == tenant_a.reviewer.pk
    # Approved, no longer extracted: still published, and asking for a re-check.
    language = after[("billing-api", "WRITTEN_IN", "go")]
    assert language.status == ClaimStatus.PUBLISHED
    assert "no longer found in 'cmdb-review'" in language.recheck
    # Waiting, no longer extracted: withdrawn from the queue with the reason.
    waiting = after[("ledger-db", "WRITTEN_IN", "rust")]
    assert waiting.status == ClaimStatus.RETRACTED
    assert waiting.valid_to == waiting.valid_from  # never valid
    # Waiting and extracted again: still waiting, the same claim (no duplicate queued).
    runs_on = after[("ledger-db", "RUNS_ON", "k8s-prod-2")]
    assert (runs_on.pk, runs_on.status) == (
        before[("ledger-db", "RUNS_ON", "k8s-prod-2")].pk, ClaimStatus.PENDING_REVIEW,
    )  # fmt: skip
    # New at tier 3: queued for review, like any new claim of the source.
    assert after[("ledger-db", "HOSTED_IN", "eu-west-2")].status == ClaimStatus.PENDING_REVIEW
    assert (run.counts["to re-check"], run.counts["withdrawn"]) == (1, 1)
    assert run.counts["new pending_review"] == 2
    _projections_match_a_rebuild(tenant_a.workspace.group_id)


@pytest.mark.django_db
def test_reading_again_with_the_same_extractors_keeps_every_claim(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    # One sentence gives several claims of one predicate (and one statement): each is
    # matched to its own claim, none withdrawn.
    source_id = ingest_markdown(
        tenant_a, tmp_path / "docs",
        {"billing.md": "# Billing\n\nThe billing-api depends on ledger-db, auth-api and "
                       "search-api. The billing-api runs on k8s-prod-1.\n"},
    )  # fmt: skip
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        source = Source.objects.get(pk=source_id)
    before = {k: (c.pk, c.status, c.version) for k, c in _claims(tenant_a, source).items()}
    assert sum(1 for _, predicate, _ in before if predicate == "DEPENDS_ON") == 3

    run = _reprocess(tenant_a, source, everything=True)

    assert (run.total, run.counts["documents"], run.counts["kept"]) == (1, 1, len(before))
    assert "withdrawn" not in run.counts
    assert {k: (c.pk, c.status, c.version) for k, c in _claims(tenant_a, source).items()} == before


@pytest.mark.django_db
def test_turning_the_llm_extractor_on_reaches_the_documents_already_stored(
    tenant_a: Tenant, tmp_path: Path, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support.fake_models import StubModelAPI, serving

    text = "# Billing\n\nThe billing-api runs on k8s-prod-1. Its ledger lives in ledger-db.\n"
    source_id = ingest_markdown(tenant_a, tmp_path / "docs", {"billing.md": text})
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        source = Source.objects.get(pk=source_id)
    before = _claims(tenant_a, source)
    assert not any(p == "STORES_IN" for _, p, _ in before)  # the rules do not read it

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with serving(StubModelAPI()) as model:
        settings.VERA_EXTRACTOR__LLM_MODEL = "gpt-4o-mini"
        settings.VERA_EXTRACTOR__LLM_BASE_URL = model.base_url
        model.reply_json({"claims": [{
            "subject": "billing-api", "subject_type": "service", "predicate": "STORES_IN",
            "object": "ledger-db", "object_is_entity": True, "object_type": "database",
            "fact": "The billing-api stores its ledger in ledger-db.", "confidence": 0.9,
            "quote": "Its ledger lives in ledger-db.",
        }]})  # fmt: skip
        run = _reprocess(tenant_a, source)
        _drain()
        assert len(model.requests) == 1  # the one stored document, read by the model

    after = _claims(tenant_a, source)
    assert after[("billing-api", "STORES_IN", "ledger-db")].status == ClaimStatus.PUBLISHED
    assert {k: after[k].pk for k in before} == {k: c.pk for k, c in before.items()}
    assert (run.counts["kept"], run.counts["new published"]) == (len(before), 1)
    assert "llm/gpt-4o-mini/prompt-" in run.version
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        assert Episode.objects.get(source=source).extractor_version == run.version
    _projections_match_a_rebuild(tenant_a.workspace.group_id)


@pytest.mark.django_db
def test_reprocessing_needs_the_admin_role_and_refuses_the_agents_source(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    from common.errors import PermissionDenied
    from curation.services.proposals import _agent_source

    source = _source(tenant_a, tmp_path / "auto.csv", tier=1, name="cmdb")
    reviewer = tenant_a.principal(tenant_a.reviewer)
    with rls.tenant_context(reviewer):
        adapters = bootstrap.providers().read_adapters_for(source)
        with pytest.raises(PermissionDenied, match="admin role"):
            reprocess_start(actor=reviewer, source_id=source.pk, adapters=adapters)
    admin = tenant_a.principal(tenant_a.admin)
    with rls.tenant_context(admin):
        agents = _agent_source(tenant_a.workspace.group_id)
        with pytest.raises(ReprocessRefused, match="agents' source"):
            reprocess_start(actor=admin, source_id=agents.pk, adapters=adapters)
        # A run already going is joined, not doubled.
        first = reprocess_start(actor=admin, source_id=source.pk, adapters=adapters)
        assert reprocess_start(actor=admin, source_id=source.pk, adapters=adapters) == first


def _state(tenant: Tenant, source_id: int) -> list[tuple[Any, ...]]:
    """The source's claims as reprocessing leaves them, without ids (two sources alike)."""
    with rls.tenant_context(tenant.principal(tenant.admin)):
        rows = Claim.objects.filter(source_id=source_id).values_list(
            "subject__canonical_name", "predicate", "object_literal",
            "object_entity__canonical_name", "status", "status_reason", "version", "recheck",
            "evidence__episode__external_id",
        )  # fmt: skip
        return sorted(rows, key=repr)


def _many(n: int) -> str:
    lines = ["id,name,owner,runs_on,language,region"]
    lines += [f"CI{i:04},svc-{i},team-{i % 7},k8s-{i % 5},go,eu-{i % 3}" for i in range(n)]
    return "\n".join(lines) + "\n"


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_reprocess_killed_mid_run_ends_where_an_uninterrupted_one_does(
    tenant_a: Tenant, tenant_b: Tenant, tmp_path: Path, app_database_url: str
) -> None:
    # The same export in two workspaces: one run is killed and run again, one is not.
    sources = []
    for tenant in (tenant_a, tenant_b):
        export = tmp_path / f"{tenant.workspace.group_id.replace(':', '-')}.csv"
        export.write_text(_many(120), encoding="utf-8")
        principal = tenant.principal(tenant.admin)
        with rls.tenant_context(principal):
            source = source_create(
                actor=principal, group_id=tenant.workspace.group_id, name="cmdb", kind="cmdb",
                config={"path": str(export)}, trust_tier=1,
            )  # fmt: skip
        assert not ingest_now(source_id=source.pk, group_id=source.group_id).error
        _remap(tenant, source)
        sources.append(source)
    killed, whole = sources

    env = {**os.environ, "DATABASE_URL": app_database_url}
    env.pop("DATABASE_OWNER_URL", None)
    command = [sys.executable, "manage.py", "reprocess", "--source", str(killed.pk),
               "--batch", "2", "--progress-every", "0.1"]  # fmt: skip
    log = (tmp_path / "killed.log").open("wb")
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    system = principal_system("test", group_ids=[tenant_a.workspace.group_id])

    def done() -> int:
        with rls.tenant_context(system):
            run = Reprocessing.objects.filter(source=killed).first()
            return 0 if run is None else int(run.counts.get("documents", 0))

    deadline = time.monotonic() + 120
    while not 0 < done() < 100:
        assert process.poll() is None, (tmp_path / "killed.log").read_text()
        assert time.monotonic() < deadline, "the run never got going"
        time.sleep(0.01)
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=10)
    log.close()
    with rls.tenant_context(system):
        interrupted = Reprocessing.objects.get(source=killed)
    assert interrupted.status == "running"
    assert 0 < interrupted.counts["documents"] < 120  # killed part-way

    rerun = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert f"run {interrupted.pk} finished" in rerun.stdout  # the same run, resumed
    uninterrupted = _reprocess(tenant_b, whole)
    with rls.tenant_context(system):
        resumed = Reprocessing.objects.get(source=killed)
    assert resumed.counts["documents"] == uninterrupted.counts["documents"] == 120
    assert {k: v for k, v in resumed.counts.items() if k != "documents"} == {
        k: v for k, v in uninterrupted.counts.items() if k != "documents"
    }
    assert _state(tenant_a, killed.pk) == _state(tenant_b, whole.pk)
