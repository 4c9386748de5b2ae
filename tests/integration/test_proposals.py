"""Agents propose facts: tier-4 proposals attributed to their principal, never published
by the call, searchable only once a reviewer accepts them."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.test import Client
from django.utils import timezone

from curation import bootstrap, selectors
from curation.domain.sources import AGENT_KIND
from curation.domain.tiers import ClaimStatus
from curation.models import Claim, Episode, OutboxJob, Source
from curation.services.entities import entity_resolve
from curation.services.proposals import ProposalRefused, claim_propose
from curation.services.sources import source_update
from curation.tasks import process_outbox
from curation.usecases import ingest_now
from tenants import rls
from tenants.domain.access import Principal
from tenants.domain.scopes import Role
from tenants.models import AuditEvent
from tenants.services.api_keys import IssuedKey
from tests.support.tenancy import Tenant, admin_site_login, markdown_source

pytestmark = pytest.mark.django_db

FACT = {
    "subject": "ledger-api",
    "predicate": "RUNS_ON",
    "object": "k8s-prod-7",
    "evidence": "The deploy manifest of ledger-api pins it to the k8s-prod-7 cluster.",
    "source_url": "https://git.example.org/ledger/deploy.yaml",
}
QUESTION = "where does ledger-api run"


@pytest.fixture(autouse=True)
def _fresh_counters() -> None:
    cache.clear()  # rate-limit and failed-authentication counters of earlier tests


def _bearer(key: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {key}"}


@pytest.fixture
def issued(tenant_a: Tenant) -> IssuedKey:
    """A key of the workspace's reviewer, capped at contributor (what an agent gets)."""
    return tenant_a.issue_key(owner=tenant_a.reviewer, role=Role.CONTRIBUTOR)


@pytest.fixture
def contributor_key(issued: IssuedKey) -> str:
    return issued.plaintext


def _propose(client: Client, key: str, **fields: object) -> Any:
    body = {**FACT, **fields}
    return client.post("/api/v1/proposals", body, content_type="application/json", **_bearer(key))


def _written(tenant: Tenant) -> tuple[int, int, int]:
    """Claims, episodes and agents' sources in the tenant's workspace."""
    with rls.tenant_context(tenant.principal(tenant.admin)):
        return (
            Claim.objects.count(),
            Episode.objects.count(),
            Source.objects.filter(kind=AGENT_KIND).count(),
        )


def _claim(tenant: Tenant, claim_id: int) -> Claim:
    with rls.tenant_context(tenant.principal(tenant.admin)):
        return Claim.objects.select_related("source").get(pk=claim_id)


def _hit_ids(client: Client, key: str) -> set[int]:
    response = client.get("/api/v1/search", {"q": QUESTION, "k": 10}, **_bearer(key))
    assert response.status_code == 200, response.content
    return {hit["claim_id"] for hit in response.json()["hits"]}


def test_a_contributors_proposal_is_recorded_as_a_tier_4_proposal(
    client: Client, tenant_a: Tenant, contributor_key: str
) -> None:
    response = _propose(client, contributor_key)
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["status"], body["group_id"], body["created"]) == (
        "proposed", tenant_a.workspace.group_id, True,
    )  # fmt: skip
    assert "waits for a reviewer" in body["message"]
    claim = _claim(tenant_a, body["claim_id"])
    assert (claim.status, claim.tier, claim.source.kind) == (ClaimStatus.PROPOSED, 4, AGENT_KIND)
    assert claim.fact_text == "ledger-api runs on k8s-prod-7."


def test_a_proposal_keeps_its_evidence_as_an_immutable_episode(
    client: Client, tenant_a: Tenant, contributor_key: str
) -> None:
    claim_id = _propose(client, contributor_key).json()["claim_id"]
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        evidence = Claim.objects.get(pk=claim_id).evidence.select_related("episode").get()
    episode = evidence.episode
    assert evidence.snippet == FACT["evidence"]
    assert episode.url == FACT["source_url"]
    stored = bootstrap.providers().object_store().get(episode.object_key)
    assert stored.decode("utf-8") == FACT["evidence"]


def test_a_proposal_is_attributed_to_the_key_and_audited(
    client: Client, tenant_a: Tenant, issued: IssuedKey
) -> None:
    claim_id = _propose(client, issued.plaintext).json()["claim_id"]
    label = f"api-key:{issued.key.prefix}"
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        event = AuditEvent.objects.get(action="claim.propose", target_id=str(claim_id))
        episode = Claim.objects.get(pk=claim_id).evidence.get().episode
    assert (event.actor_label, event.actor_id) == (label, tenant_a.reviewer.pk)
    assert episode.title == f"Proposed by {label} (user #{tenant_a.reviewer.pk})"


def test_a_proposal_waits_in_the_proposals_queue_with_who_proposed_it(
    client: Client, tenant_a: Tenant, issued: IssuedKey
) -> None:
    claim_id = _propose(client, issued.plaintext).json()["claim_id"]
    reviewer = tenant_a.principal(tenant_a.reviewer)
    with rls.tenant_context(reviewer):
        queue = selectors.review_queue(principal=reviewer, status="proposed", filters={})
        assert [claim.pk for claim in queue] == [claim_id]
        assert selectors.queue_counts(reviewer)["proposals"] == 1
    client.force_login(tenant_a.reviewer)
    page = client.get("/review/", {"queue": "proposals"})
    assert f"Proposed by api-key:{issued.key.prefix}" in page.content.decode()


def test_a_proposal_is_searchable_only_after_a_reviewer_accepts_it(
    client: Client, tenant_a: Tenant, contributor_key: str
) -> None:
    claim_id = _propose(client, contributor_key).json()["claim_id"]
    process_outbox()
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        assert not OutboxJob.objects.filter(payload__claim_id=claim_id).exists()
    assert claim_id not in _hit_ids(client, contributor_key)
    client.force_login(tenant_a.reviewer)
    accepted = client.post(f"/review/proposals/{claim_id}/accept", {"version": 1})
    assert accepted.status_code == 302
    client.logout()
    process_outbox()
    assert _claim(tenant_a, claim_id).status == ClaimStatus.PUBLISHED
    assert claim_id in _hit_ids(client, contributor_key)


def test_a_viewer_key_is_refused_and_nothing_is_written(client: Client, tenant_a: Tenant) -> None:
    key = tenant_a.issue_key(owner=tenant_a.reviewer, role=Role.VIEWER).plaintext
    response = _propose(client, key)
    assert response.status_code == 403
    assert "contributor" in response.json()["detail"]
    assert _written(tenant_a) == (0, 0, 0)


def test_another_tenants_key_cannot_propose_into_a_workspace_it_names(
    client: Client, tenant_a: Tenant, tenant_b: Tenant
) -> None:
    key = tenant_b.issue_key(owner=tenant_b.reviewer, role=Role.CONTRIBUTOR).plaintext
    response = _propose(client, key, scope=tenant_a.workspace.group_id)
    assert response.status_code == 404
    assert response.json() == {
        "detail": "No such scope: name one of your workspaces by its group id."
    }
    assert _written(tenant_a) == (0, 0, 0)
    assert _written(tenant_b) == (0, 0, 0)


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("predicate", "FLIES_TO", "this workspace's predicates are: "),
        ("predicate", "runs on", "UPPER_SNAKE_CASE"),
        ("subject", "   ", "blank"),
        ("object", "!!", "letter or digit"),
        ("evidence", "x" * 4001, "4000"),
        ("source_url", "ftp://files.example.org/a", "http"),
        ("source_url", "javascript:alert(1)", "http"),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_nothing_is_written(
    client: Client, tenant_a: Tenant, contributor_key: str, field: str, value: str, says: str
) -> None:
    response = _propose(client, contributor_key, **{field: value})
    assert response.status_code == 400
    errors = response.json()
    assert list(errors) == [field]
    assert says in str(errors[field])
    assert _written(tenant_a) == (0, 0, 0)


def test_an_unknown_predicate_is_refused_with_the_workspaces_predicates(
    client: Client, tenant_a: Tenant, contributor_key: str
) -> None:
    message = _propose(client, contributor_key, predicate="FLIES_TO").json()["predicate"]
    assert "RUNS_ON" in str(message)
    assert "OWNED_BY" in str(message)


def test_proposing_the_same_fact_twice_gives_one_proposal(
    client: Client, tenant_a: Tenant, contributor_key: str
) -> None:
    first = _propose(client, contributor_key)
    second = _propose(client, contributor_key, subject="  Ledger-API ")
    assert (first.status_code, second.status_code) == (201, 200)
    assert second.json()["claim_id"] == first.json()["claim_id"]
    assert second.json()["created"] is False
    assert _written(tenant_a) == (1, 1, 1)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        assert AuditEvent.objects.filter(action="claim.propose").count() == 1


def test_other_evidence_for_the_same_fact_is_another_proposal(
    client: Client, tenant_a: Tenant, contributor_key: str
) -> None:
    first = _propose(client, contributor_key).json()["claim_id"]
    second = _propose(client, contributor_key, evidence="The runbook says so.").json()["claim_id"]
    assert first != second
    assert _written(tenant_a) == (2, 2, 1)


# --- the service ------------------------------------------------------------------------


def _store() -> Any:
    return bootstrap.providers().object_store()


def test_a_proposal_resolves_its_subject_to_the_workspaces_entity(tenant_a: Tenant) -> None:
    actor = tenant_a.principal(tenant_a.admin)
    with rls.tenant_context(actor):
        known = entity_resolve(group_id=tenant_a.workspace.group_id, name="billing-api").entity
    claim = claim_propose(
        actor=actor, store=_store(), subject="Billing-API", predicate="OWNED_BY",
        object="payments-team", evidence="CODEOWNERS names payments-team.",
    )  # fmt: skip
    assert claim.subject_id == known.pk
    assert claim.status == ClaimStatus.PROPOSED  # an admin's agent proposes too


def test_a_has_predicate_proposes_a_value_not_a_thing(tenant_a: Tenant) -> None:
    claim = claim_propose(
        actor=tenant_a.principal(tenant_a.admin), store=_store(), subject="billing-api",
        predicate="HAS_VERSION", object="4.2.1", evidence="The release notes say 4.2.1.",
    )  # fmt: skip
    assert (claim.object_literal, claim.object_entity_id) == ("4.2.1", None)


def test_a_caller_of_several_workspaces_must_name_one(tenant_a: Tenant, tenant_b: Tenant) -> None:
    groups = (tenant_a.workspace.group_id, tenant_b.workspace.group_id)
    actor = Principal(label="agent:test", roles=dict.fromkeys(groups, Role.CONTRIBUTOR))
    with pytest.raises(ProposalRefused, match="name one") as refused:
        claim_propose(actor=actor, store=_store(), **FACT)
    assert list(refused.value.errors) == ["scope"]
    claim = claim_propose(actor=actor, store=_store(), group_id=groups[1], **FACT)
    assert claim.group_id == groups[1]


def test_the_agents_source_is_never_scheduled_nor_run(tenant_a: Tenant) -> None:
    actor = tenant_a.principal(tenant_a.admin)
    source_id = claim_propose(actor=actor, store=_store(), **FACT).source_id
    later = timezone.now() + dt.timedelta(days=365)
    due = selectors.sources_due(now=later, resend_before=later)
    assert source_id not in {pk for pk, _ in due}
    with rls.tenant_context(actor):
        with pytest.raises(ValueError, match="no schedule_seconds"):
            source_update(actor=actor, source_id=source_id, schedule_seconds=60)
        with pytest.raises(IntegrityError), transaction.atomic():
            Source.objects.filter(pk=source_id).update(schedule_seconds=60)
    report = ingest_now(source_id=source_id, group_id=tenant_a.workspace.group_id)
    assert "no connector" in report.error


def test_an_admin_can_turn_agents_proposals_off(tenant_a: Tenant, client: Client) -> None:
    actor = tenant_a.principal(tenant_a.admin)
    source_id = claim_propose(actor=actor, store=_store(), **FACT).source_id
    with rls.tenant_context(actor):
        source_update(actor=actor, source_id=source_id, enabled=False)
    key = tenant_a.issue_key(owner=tenant_a.reviewer, role=Role.CONTRIBUTOR).plaintext
    response = _propose(client, key, subject="search-api")
    assert response.status_code == 403
    assert "turned" in response.json()["detail"]


def test_the_source_admin_shows_the_agents_source(tenant_a: Tenant, client: Client) -> None:
    actor = tenant_a.principal(tenant_a.admin)
    source_id = claim_propose(actor=actor, store=_store(), **FACT).source_id
    admin_site_login(client, tenant_a.admin)
    listing = client.get("/admin/curation/source/", {"kind": AGENT_KIND})
    assert listing.status_code == 200
    assert "Agent proposals" in listing.content.decode()
    assert client.get(f"/admin/curation/source/{source_id}/change/").status_code == 200


def test_the_agents_source_takes_another_name_when_its_own_is_taken(
    tenant_a: Tenant, tmp_path: Any
) -> None:
    markdown_source(tenant_a, tmp_path, tier=1, name="Agent proposals")
    claim = claim_propose(actor=tenant_a.principal(tenant_a.admin), store=_store(), **FACT)
    source = _claim(tenant_a, claim.pk).source
    assert (source.kind, source.name) == (AGENT_KIND, "Agent proposals (2)")
