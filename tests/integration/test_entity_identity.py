"""Identity that structure gives: a CMDB item is its id, whatever its name looks like.

The defect: on a generated estate "notify-stock-queue" was linked by the trigram step
to "stock-notify-queue" (the same words in another order), so its tier-1 owner and
host superseded the other queue's. Now a structured record's subject carries its id in
its source: two ids are never linked by name (at most a merge candidate), one id stays
one entity through a rename, and prose still finds each item by its exact name. Real
ingestion (CMDB export and Markdown), real Postgres under RLS.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from curation.domain.tiers import ClaimStatus
from curation.models import Claim, Entity, EntityIdentity, MergeCandidate, Source
from curation.services.entities import Resolution, entity_resolve
from curation.services.sources import source_create
from curation.usecases import ingest_now
from retrieval import bootstrap as retrieval_bootstrap
from retrieval.adapters.hashing_embedder import HashingEmbedder
from retrieval.services.erasure import erase
from tenants import rls
from tests.support.ingest import ingest_markdown
from tests.support.tenancy import Tenant

pytestmark = pytest.mark.django_db

QUEUES = (
    "id,name,host,owner\n"
    "CI101,stock-notify-queue,k8s-node-7,team-inventory\n"
    "CI102,notify-stock-queue,k8s-node-9,team-notifications\n"
)


def _cmdb(tenant: Tenant, export: Path, text: str, *, name: str = "cmdb") -> Source:
    """A tier-1 CMDB source over `export` (written with `text`), ingested once."""
    export.write_text(text, encoding="utf-8")
    principal = tenant.principal(tenant.admin)
    with rls.tenant_context(principal):
        source = source_create(
            actor=principal, group_id=tenant.workspace.group_id, name=name, kind="cmdb",
            config={"path": str(export)}, trust_tier=1,
        )  # fmt: skip
    _run(source)
    return source


def _run(source: Source) -> None:
    report = ingest_now(source_id=source.pk, group_id=source.group_id)
    assert not report.error, report.error
    assert report.failed == 0, report.failures


def _item(tenant: Tenant, external_id: str) -> Entity:
    """The entity that holds the CMDB id."""
    with rls.tenant_context(tenant.principal(tenant.admin)):
        return EntityIdentity.objects.select_related("entity").get(external_id=external_id).entity


def _resolve(tenant: Tenant, name: str) -> Resolution:
    """A name resolved as prose resolves it: no identity, a (hashing) embedder."""
    return entity_resolve(group_id=tenant.workspace.group_id, name=name, embedder=HashingEmbedder())


def _current(tenant: Tenant, entity: Entity, predicate: str) -> list[str]:
    """The published objects of the entity's `predicate` claims."""
    with rls.tenant_context(tenant.principal(tenant.admin)):
        return sorted(
            Claim.objects.filter(
                subject=entity, predicate=predicate, status=ClaimStatus.PUBLISHED
            ).values_list("object_entity__canonical_name", flat=True)
        )


@pytest.fixture
def queues(tenant_a: Tenant, tmp_path: Path) -> Source:
    return _cmdb(tenant_a, tmp_path / "cmdb.csv", QUEUES)


# --- same words, another order -----------------------------------------------------------


def test_reordered_names_stay_two_entities_when_their_ids_differ(
    tenant_a: Tenant, queues: Source
) -> None:
    assert _item(tenant_a, "CI101") != _item(tenant_a, "CI102")


@pytest.mark.parametrize(
    ("external_id", "host", "owner"),
    [("CI101", "k8s-node-7", "team-inventory"), ("CI102", "k8s-node-9", "team-notifications")],
)
def test_each_item_keeps_its_own_host_and_owner_when_names_are_reordered(
    tenant_a: Tenant, queues: Source, external_id: str, host: str, owner: str
) -> None:
    entity = _item(tenant_a, external_id)
    assert (_current(tenant_a, entity, "RUNS_ON"), _current(tenant_a, entity, "OWNED_BY")) == (
        [host],
        [owner],
    )


def test_nothing_is_superseded_across_items_when_names_are_reordered(
    tenant_a: Tenant, queues: Source
) -> None:
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        superseded = Claim.objects.filter(status=ClaimStatus.SUPERSEDED).count()
    assert superseded == 0


# --- two ids, near-same names ----------------------------------------------------------------


@pytest.mark.parametrize(
    "other_name", ["billing-api", "billing-api ", "Billing API", "billing_api", "Billing-Api."]
)
def test_two_ids_stay_two_entities_when_their_names_are_near_same(
    tenant_a: Tenant, tmp_path: Path, other_name: str
) -> None:
    export = "id,name,host\nCI001,billing-api,k8s-prod-1\n" + f"CI002,{other_name},k8s-prod-2\n"
    _cmdb(tenant_a, tmp_path / "cmdb.csv", export)
    one, other = _item(tenant_a, "CI001"), _item(tenant_a, "CI002")
    assert one != other
    assert (_current(tenant_a, one, "RUNS_ON"), _current(tenant_a, other, "RUNS_ON")) == (
        ["k8s-prod-1"],
        ["k8s-prod-2"],
    )


def test_a_near_same_name_of_another_id_is_at_most_an_open_merge_candidate(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    export = "id,name,host\nCI001,billing-api,k8s-prod-1\nCI002,Billing API,k8s-prod-2\n"
    _cmdb(tenant_a, tmp_path / "cmdb.csv", export)
    one, other = _item(tenant_a, "CI001"), _item(tenant_a, "CI002")
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        candidate = MergeCandidate.objects.get(entity=other)
        assert (candidate.candidate, candidate.status) == (one, MergeCandidate.Status.OPEN)
        assert Entity.objects.get(pk=other.pk).merged_into is None


# --- one letter apart -------------------------------------------------------------------------

# A dependency names a queue before the queue's own record arrives, and a second queue is
# spelt one letter apart: the bench estate's "metric-queue" / "metrics-queue" defect.
PLURALS = (
    "id,name,depends_on,host\n"
    "CI201,checkout-api,metrics-queue,k8s-node-1\n"
    "CI202,metric-queue,,k8s-node-2\n"
    "CI203,metrics-queue,,k8s-node-3\n"
)


def test_names_one_letter_apart_stay_two_items_when_a_reference_came_first(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    _cmdb(tenant_a, tmp_path / "cmdb.csv", PLURALS)
    metric, metrics = _item(tenant_a, "CI202"), _item(tenant_a, "CI203")
    assert metric != metrics
    assert _current(tenant_a, _item(tenant_a, "CI201"), "DEPENDS_ON") == ["metrics-queue"]
    assert (_current(tenant_a, metric, "RUNS_ON"), _current(tenant_a, metrics, "RUNS_ON")) == (
        ["k8s-node-2"],
        ["k8s-node-3"],
    )


def test_prose_spelt_otherwise_than_a_record_is_a_merge_candidate_when_resolved(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    _cmdb(tenant_a, tmp_path / "cmdb.csv", "id,name,host\nCI301,invoice-worker,k8s-node-1\n")
    item = _item(tenant_a, "CI301")
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        resolution = entity_resolve(
            group_id=tenant_a.workspace.group_id, name="invoices-worker",
            entity_type=item.entity_type, embedder=HashingEmbedder(),
        )  # fmt: skip
        assert resolution.method == "new"
        candidate = MergeCandidate.objects.get(entity=resolution.entity)
        assert candidate.candidate == item


# --- one id, a new name ----------------------------------------------------------------------


def test_a_renamed_item_keeps_its_entity_when_its_id_stays(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    export = tmp_path / "cmdb.csv"
    source = _cmdb(tenant_a, export, "id,name,owner\nCI301,ledger-api,team-books\n")
    before = _item(tenant_a, "CI301")
    export.write_text("id,name,owner\nCI301,accounts-service,team-books\n", encoding="utf-8")
    _run(source)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        subjects = set(Claim.objects.values_list("subject_id", flat=True))
    assert subjects == {before.pk}


# --- prose ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "external_id"), [("stock-notify-queue", "CI101"), ("notify-stock-queue", "CI102")]
)
def test_prose_links_to_the_item_by_exact_name_when_the_cmdb_knows_it(
    tenant_a: Tenant, queues: Source, tmp_path: Path, name: str, external_id: str
) -> None:
    runbook = f"# Runbook\n\nThe {name} depends on rabbitmq-main.\n"
    ingest_markdown(tenant_a, tmp_path / "docs", {"runbook.md": runbook}, tier=3)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        claim = Claim.objects.get(predicate="DEPENDS_ON")
    assert claim.subject_id == _item(tenant_a, external_id).pk


def test_prose_names_in_another_word_order_meet_as_a_merge_candidate_when_resolved(
    tenant_a: Tenant,
) -> None:
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        one = _resolve(tenant_a, "stock-notify-queue")
        other = _resolve(tenant_a, "Notify Stock Queue")
        candidate = MergeCandidate.objects.get(entity=other.entity)
    assert (other.method, candidate.candidate_id, candidate.status) == (
        "new",
        one.entity.pk,
        MergeCandidate.Status.OPEN,
    )


# --- erasure ----------------------------------------------------------------------------------


def test_erasing_the_source_removes_its_identities_when_its_items_stay_named_elsewhere(
    tenant_a: Tenant, queues: Source, tmp_path: Path
) -> None:
    runbook = "# Runbook\n\nThe stock-notify-queue depends on rabbitmq-main.\n"
    ingest_markdown(tenant_a, tmp_path / "docs", {"runbook.md": runbook}, tier=3)
    kept = _item(tenant_a, "CI101")
    principal = tenant_a.principal(tenant_a.admin)
    with rls.tenant_context(principal):
        erase(
            actor=principal, kind="source", target_id=queues.pk, reason="t", confirm=True,
            catalog=retrieval_bootstrap.providers().embedders(),
        )  # fmt: skip
        assert (EntityIdentity.objects.count(), Entity.objects.filter(pk=kept.pk).exists()) == (
            0,
            True,
        )
