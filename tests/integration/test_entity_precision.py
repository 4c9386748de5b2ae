"""Resolution that does not merge different things, and decisions that say what happened.

The story: a tier-3 runbook says the Payments API runs on cluster prod-eu-1 (approved);
a tier-4 note says prod-eu-3. Trigram resolution used to make "prod-eu-3" an alias of
prod-eu-1, the proposal became a duplicate, and the portal said "Accepted" while the
service closed it as a duplicate. Real ingestion, real Postgres, real search.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from django.contrib.messages import get_messages
from django.test import Client

from common.errors import PermissionDenied
from curation.domain.outbox import Consumer, Priority
from curation.domain.tiers import ClaimStatus
from curation.models import Claim, Entity, EntityAlias, MergeCandidate, OutboxJob
from curation.services import review
from curation.services.entities import (
    alias_unlink,
    entity_merge,
    entity_resolve,
    entity_unmerge,
)
from curation.tasks import process_outbox
from retrieval.adapters.hashing_embedder import HashingEmbedder
from tenants import rls
from tenants.models import AuditEvent
from tests.support.ingest import ingest_folder
from tests.support.tenancy import Tenant, admin_site_login

pytestmark = pytest.mark.django_db
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
RUNBOOK = "The Payments API runs on Kubernetes cluster prod-eu-1."
NOTE = "The Payments API runs on Kubernetes cluster prod-eu-3."


@pytest.fixture
def ws(tenant_a: Tenant):
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        yield tenant_a


def _resolve(tenant: Tenant, name: str, **kwargs: object):
    return entity_resolve(
        group_id=tenant.workspace.group_id, name=name, embedder=HashingEmbedder(), **kwargs
    )


def _ingest(tenant: Tenant, root: Path, text: str, *, tier: int, at: dt.datetime = T0) -> None:
    """A one-document Markdown source of the tier, ingested through the real pipeline."""
    name = f"tier-{tier}-{at:%j}"
    document = {"doc.md": f"# {name}\n\n{text}\n"}
    ingest_folder(tenant, root / name, document, tier=tier, name=name, at=at)


def _runs_on(tenant: Tenant, status: ClaimStatus) -> Claim:
    with rls.tenant_context(tenant.principal(tenant.admin)):
        return Claim.objects.select_related("object_entity").get(predicate="RUNS_ON", status=status)


# --- resolution -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("Kubernetes cluster prod-eu-1", "Kubernetes cluster prod-eu-3"),
        ("db-01", "db-02"),
        ("payments-v1", "payments-v2"),
    ],
)
def test_identifier_like_names_stay_distinct_when_they_look_alike(
    ws: Tenant, first: str, second: str
) -> None:
    one = _resolve(ws, first)
    other = _resolve(ws, second)
    assert (other.method, other.entity == one.entity) == ("new", False)
    proposed = MergeCandidate.objects.filter(entity=other.entity)
    assert proposed.count() <= 1
    assert set(proposed.values_list("status", flat=True)) <= {MergeCandidate.Status.OPEN}


def test_a_near_identical_sibling_is_left_to_a_reviewer_when_blocked(ws: Tenant) -> None:
    one = _resolve(ws, "Kubernetes cluster prod-eu-1").entity
    other = _resolve(ws, "Kubernetes cluster prod-eu-3").entity
    candidate = MergeCandidate.objects.get(entity=other)
    assert (candidate.candidate, candidate.method, candidate.status) == (
        one, "fuzzy", MergeCandidate.Status.OPEN,
    )  # fmt: skip
    assert candidate.score >= 0.8  # the old rule would have merged them


def test_a_blocked_pair_is_never_put_to_the_judge(ws: Tenant) -> None:
    class AlwaysSame:
        asked: list[tuple[str, str]] = []

        def same_entity(self, a: str, b: str, *, entity_type: str) -> bool:
            self.asked.append((a, b))
            return True

    judge = AlwaysSame()
    one = _resolve(ws, "payments-v1").entity
    assert _resolve(ws, "payments-v2", judge=judge).entity != one
    assert judge.asked == []


def test_every_alias_records_how_it_was_linked(ws: Tenant) -> None:
    original = _resolve(ws, "payments-gateway-service")
    typo = _resolve(ws, "payments-gateway-servce")
    assert typo.entity == original.entity
    rows = EntityAlias.objects.filter(entity=original.entity).order_by("pk")
    (new_method, new_score), (fuzzy_method, fuzzy_score) = rows.values_list("method", "score")
    assert (new_method, new_score) == ("new", None)
    assert fuzzy_method == "fuzzy"
    assert fuzzy_score == pytest.approx(typo.score)
    assert fuzzy_score >= 0.8


def test_two_documents_naming_one_service_differently_meet_in_the_queue(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    _ingest(tenant_a, tmp_path, "The Payments API runs on prod-eu-1.", tier=1)
    later = T0 + dt.timedelta(days=1)
    _ingest(tenant_a, tmp_path, "The payments-api service depends on ledger-db.", tier=1, at=later)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        runs = Claim.objects.get(predicate="RUNS_ON").subject
        depends = Claim.objects.get(predicate="DEPENDS_ON").subject
        open_pair = MergeCandidate.objects.filter(
            entity=depends, candidate=runs, status=MergeCandidate.Status.OPEN
        )
        assert depends == runs or open_pair.exists()


# --- undoing an automatic link ----------------------------------------------------------


def test_an_automatic_link_can_be_unlinked_into_its_own_entity(ws: Tenant) -> None:
    original = _resolve(ws, "payments-gateway-service").entity
    _resolve(ws, "payments-gateway-servce")
    alias = EntityAlias.objects.get(alias="payments-gateway-servce")
    unlinked = alias_unlink(actor=ws.principal(ws.reviewer), alias_id=alias.pk)
    assert (unlinked.previous, unlinked.entity.canonical_name) == (
        original, "payments-gateway-servce",
    )  # fmt: skip
    again = _resolve(ws, "payments-gateway-servce")
    assert (again.method, again.entity) == ("exact", unlinked.entity)
    assert MergeCandidate.objects.get(entity=unlinked.entity).status == "kept_apart"
    assert AuditEvent.objects.filter(action="entity.alias_unlink").count() == 1


def test_unlinking_names_the_claims_a_reviewer_should_check(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    _ingest(tenant_a, tmp_path, "The payments-gateway-service runs on prod-eu-1.", tier=1)
    later = T0 + dt.timedelta(days=1)
    _ingest(
        tenant_a, tmp_path, "The payments-gateway-servce depends on ledger-db.", tier=1, at=later
    )
    actor = tenant_a.principal(tenant_a.reviewer)
    with rls.tenant_context(actor):
        alias = EntityAlias.objects.get(alias="payments-gateway-servce")
        assert alias.method == "fuzzy"
        unlinked = alias_unlink(actor=actor, alias_id=alias.pk)
        depends = Claim.objects.get(predicate="DEPENDS_ON")
    assert unlinked.claims_to_check == (depends.pk,)
    assert depends.subject_id == unlinked.previous.pk  # claims are not rewritten


def test_an_entitys_own_name_cannot_be_unlinked(ws: Tenant) -> None:
    entity = _resolve(ws, "ledger-db").entity
    alias = EntityAlias.objects.get(entity=entity)
    with pytest.raises(ValueError, match="automatically linked"):
        alias_unlink(actor=ws.principal(ws.reviewer), alias_id=alias.pk)


def test_a_viewer_cannot_unlink(ws: Tenant) -> None:
    _resolve(ws, "payments-gateway-service")
    _resolve(ws, "payments-gateway-servce")
    alias = EntityAlias.objects.get(alias="payments-gateway-servce")
    with pytest.raises(PermissionDenied):
        alias_unlink(actor=ws.principal(ws.viewer), alias_id=alias.pk)


def test_the_admin_unlinks_an_alias_through_the_service(ws: Tenant, client: Client) -> None:
    original = _resolve(ws, "payments-gateway-service").entity
    _resolve(ws, "payments-gateway-servce")
    alias = EntityAlias.objects.get(alias="payments-gateway-servce")
    admin_site_login(client, ws.admin)
    response = client.post(
        "/admin/curation/entityalias/",
        {"action": "unlink_selected", "_selected_action": [alias.pk]},
        follow=True,
    )
    alias.refresh_from_db()
    shown = [str(message) for message in get_messages(response.wsgi_request)]
    assert shown == [f"payments-gateway-servce is an entity of its own now (#{alias.entity_id})"]
    assert (alias.entity_id != original.pk, alias.method) == (True, "review")


# --- re-projection ----------------------------------------------------------------------


def _urgent_projections(claim: Claim) -> int:
    return OutboxJob.objects.filter(
        kind="claim.project", payload__claim_id=claim.pk, consumer=Consumer.GRAPH,
        priority=Priority.INTERACTIVE,
    ).count()  # fmt: skip


def test_a_merge_and_its_undoing_reproject_the_published_claims(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    _ingest(tenant_a, tmp_path, RUNBOOK, tier=1)
    actor = tenant_a.principal(tenant_a.reviewer)
    with rls.tenant_context(actor):
        claim = Claim.objects.get(predicate="RUNS_ON")
        other = Entity.objects.create(
            group_id=claim.group_id, canonical_name="EU cluster one", entity_type="thing"
        )
        entity_merge(actor=actor, entity_id=claim.object_entity_id, into_id=other.pk)
        assert _urgent_projections(claim) == 1
        entity_unmerge(actor=actor, entity_id=claim.object_entity_id)
        assert _urgent_projections(claim) == 2


def test_after_a_merge_the_graph_edge_and_the_index_follow_the_survivor(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    from curation import bootstrap
    from retrieval.models import SearchDocument

    _ingest(tenant_a, tmp_path, RUNBOOK, tier=1)
    process_outbox()
    actor = tenant_a.principal(tenant_a.reviewer)
    with rls.tenant_context(actor):
        claim = Claim.objects.get(predicate="RUNS_ON")
        survivor = Entity.objects.create(
            group_id=claim.group_id, canonical_name="Payments service", entity_type="thing"
        )
        entity_merge(actor=actor, entity_id=claim.subject_id, into_id=survivor.pk)
    process_outbox()
    graph = bootstrap.providers().graph()
    edges = graph._graph.query(  # type: ignore[attr-defined]
        "MATCH (s)-[r:CLAIM]->() WHERE r.claim_id = $id RETURN s.key", {"id": claim.pk}
    ).result_set
    assert [row[0] for row in edges] == [f"e:{survivor.pk}"]
    with rls.tenant_context(actor):
        document = SearchDocument.objects.get(claim_id=claim.pk)
    assert document.subject_name == "Payments service"


# --- the two-reviewer story -------------------------------------------------------------


@pytest.fixture
def story(tenant_a: Tenant, tmp_path: Path) -> Tenant:
    """The runbook's prod-eu-1 approved by reviewer 1; the note's prod-eu-3 proposed."""
    _ingest(tenant_a, tmp_path, RUNBOOK, tier=3)
    pending = _runs_on(tenant_a, ClaimStatus.PENDING_REVIEW)
    first = tenant_a.principal(tenant_a.reviewer)
    with rls.tenant_context(first):
        review.review_approve(actor=first, claim_id=pending.pk, version=pending.version)
    _ingest(tenant_a, tmp_path, NOTE, tier=4, at=T0 + dt.timedelta(days=30))
    return tenant_a


def test_the_note_proposes_another_cluster_not_a_duplicate(story: Tenant) -> None:
    published = _runs_on(story, ClaimStatus.PUBLISHED)
    proposal = _runs_on(story, ClaimStatus.PROPOSED)
    assert proposal.object_entity != published.object_entity
    assert proposal.object_entity.canonical_name == "Kubernetes cluster prod-eu-3"


def test_accepting_the_note_publishes_it_and_supersedes_the_runbook(story: Tenant) -> None:
    old = _runs_on(story, ClaimStatus.PUBLISHED)
    proposal = _runs_on(story, ClaimStatus.PROPOSED)
    second = story.principal(story.admin)
    with rls.tenant_context(second):
        outcome = review.proposal_accept(
            actor=second, claim_id=proposal.pk, version=proposal.version
        )
        old.refresh_from_db()
        proposal.refresh_from_db()
    assert (outcome.result, outcome.live_id, outcome.superseded) == (
        review.Result.PUBLISHED, proposal.pk, (old.pk,),
    )  # fmt: skip
    assert outcome.message == f"Published #{proposal.pk}; superseded #{old.pk}."
    assert (proposal.status, old.status) == (ClaimStatus.PUBLISHED, ClaimStatus.SUPERSEDED)


def test_search_answers_the_new_cluster_now_and_the_old_one_as_of_before(
    story: Tenant, client: Client
) -> None:
    proposal = _runs_on(story, ClaimStatus.PROPOSED)
    second = story.principal(story.admin)
    with rls.tenant_context(second):
        review.proposal_accept(actor=second, claim_id=proposal.pk, version=proposal.version)
    process_outbox()
    client.force_login(story.viewer)
    query = {"q": "Payments API runs on", "predicate": "RUNS_ON"}
    now = client.get("/api/v1/search", query).json()
    assert [hit["fact"] for hit in now["hits"]] == [NOTE]
    before = (T0 + dt.timedelta(days=1)).isoformat()
    then = client.get("/api/v1/search", {**query, "as_of": before}).json()
    assert [(hit["fact"], hit["status"]) for hit in then["hits"]] == [(RUNBOOK, "superseded")]


# --- what the reviewer is told ----------------------------------------------------------


def test_the_portal_shows_the_services_message_when_accepting(
    story: Tenant, client: Client
) -> None:
    old = _runs_on(story, ClaimStatus.PUBLISHED)
    proposal = _runs_on(story, ClaimStatus.PROPOSED)
    client.force_login(story.admin)
    response = client.post(
        f"/review/proposals/{proposal.pk}/accept",
        {"version": proposal.version},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200
    assert f'role="status">Published #{proposal.pk}; superseded #{old.pk}.</td>' in (
        response.content.decode()
    )


def test_the_portal_says_duplicate_when_the_value_is_already_published(
    tenant_a: Tenant, tmp_path: Path, client: Client
) -> None:
    _ingest(tenant_a, tmp_path, RUNBOOK, tier=1)
    _ingest(tenant_a, tmp_path, RUNBOOK, tier=4, at=T0 + dt.timedelta(days=1))
    live = _runs_on(tenant_a, ClaimStatus.PUBLISHED)
    proposal = _runs_on(tenant_a, ClaimStatus.PROPOSED)
    client.force_login(tenant_a.reviewer)
    html = client.post(
        f"/review/proposals/{proposal.pk}/accept",
        {"version": proposal.version},
        HTTP_HX_REQUEST="true",
    ).content.decode()
    assert (
        f"Already published as #{live.pk}: its evidence and your verification were added "
        "there; this proposal is closed as a duplicate." in html
    )
    assert "Accepted" not in html
    assert _runs_on(tenant_a, ClaimStatus.REJECTED).pk == proposal.pk


def test_the_admin_action_shows_the_services_message(story: Tenant, client: Client) -> None:
    old = _runs_on(story, ClaimStatus.PUBLISHED)
    proposal = _runs_on(story, ClaimStatus.PROPOSED)
    admin_site_login(client, story.admin)
    response = client.post(
        "/admin/curation/claim/",
        {"action": "accept_selected", "_selected_action": [proposal.pk]},
        follow=True,
    )
    shown = [str(message) for message in get_messages(response.wsgi_request)]
    assert shown == [f"Published #{proposal.pk}; superseded #{old.pk}."]
