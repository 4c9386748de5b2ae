"""`seed_demo` creates the demo workspace, its admin and reviewer, and a knowledge sample once.

The sample (demo/) goes through the real connectors, ingestion and outbox, so a newcomer
finds claims to review, proposals, a conflict, a superseded value and search hits.
"""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.management import call_command
from django.test import Client

from curation.domain.tiers import ClaimStatus
from curation.models import Claim, Episode, Evidence, OutboxJob, Source
from curation.selectors import attach_current_values
from retrieval.models import SearchDocument
from tenants import rls
from tenants.domain.access import Principal
from tenants.domain.scopes import Role
from tenants.models import Membership, Scope
from tenants.selectors import principal_system

pytestmark = pytest.mark.django_db


def _seed(sources_dir: Path | None = None) -> str:
    out = StringIO()
    options = {"sources_dir": sources_dir} if sources_dir else {}
    call_command("seed_demo", stdout=out, stderr=StringIO(), **options)
    return out.getvalue()


@pytest.fixture
def sources_dir(tmp_path: Path) -> Path:
    """Where the sample is copied: below the temp dir, an allowed file root in tests."""
    return tmp_path / "demo-sources"


@pytest.fixture
def demo(sources_dir: Path) -> Principal:
    """The seeded demo workspace, as a principal that sees it."""
    _seed(sources_dir)
    workspace = Scope.objects.get(name="Demo Workspace")
    return principal_system("test", group_ids=[workspace.group_id])


def _claims(principal: Principal, **filters: object) -> list[Claim]:
    with rls.tenant_context(principal):
        return list(
            Claim.objects.filter(**filters).select_related("subject", "object_entity", "source")
        )


def _runs_on(principal: Principal, subject: str, status: str) -> list[Claim]:
    return _claims(principal, subject__canonical_name=subject, predicate="RUNS_ON", status=status)


def _object(claim: Claim) -> str | None:
    entity = claim.object_entity
    return entity.canonical_name if entity is not None else claim.object_literal


def _counts(principal: Principal) -> dict[str, int]:
    with rls.tenant_context(principal):
        models = (Source, Episode, Claim, Evidence, OutboxJob, SearchDocument)
        return {model.__name__: model.objects.count() for model in models}


def test_seed_demo_creates_workspace_with_admin_and_reviewer(monkeypatch) -> None:
    monkeypatch.setenv("VERA_DEMO__REVIEWER_PASSWORD", "a-long-reviewer-pass")
    _seed()
    workspace = Scope.objects.get(name="Demo Workspace")
    assert workspace.group_id.startswith("w:")
    assert workspace.parent is not None
    assert workspace.parent.group_id.startswith("o:")
    roles = dict(Membership.objects.filter(scope=workspace).values_list("user__username", "role"))
    assert roles == {"admin": Role.ADMIN, "reviewer": Role.REVIEWER}
    assert authenticate(username="reviewer", password="a-long-reviewer-pass") is not None


def test_seed_demo_prints_a_generated_password_once(monkeypatch) -> None:
    monkeypatch.delenv("VERA_DEMO__ADMIN_PASSWORD", raising=False)
    first = _seed()
    line = next(line for line in first.splitlines() if line.startswith("demo user 'admin'"))
    password = line.split("password: ")[1].split(" ")[0]
    assert authenticate(username="admin", password=password) is not None
    second = _seed()
    assert password not in second
    assert "exists" in second


def test_seed_demo_is_idempotent() -> None:
    _seed()
    _seed()
    assert Scope.objects.filter(name="Demo Workspace").count() == 1
    assert get_user_model().objects.filter(username__in=["admin", "reviewer"]).count() == 2


def test_no_knowledge_seeded_when_sources_dir_is_not_an_allowed_root(tmp_path: Path) -> None:
    err = StringIO()
    outside = Path("/") / "vera-demo-not-allowed"
    call_command("seed_demo", sources_dir=outside, stdout=StringIO(), stderr=err)
    assert "demo knowledge skipped" in err.getvalue()
    assert not outside.exists()


def test_demo_has_runbook_claims_waiting_for_review_when_seeded(demo: Principal) -> None:
    pending = _claims(demo, status=ClaimStatus.PENDING_REVIEW)
    assert {claim.source.name for claim in pending} == {"Runbooks"}
    assert {"RUNS_ON", "OWNED_BY", "STATES"} <= {claim.predicate for claim in pending}


def test_demo_has_chat_proposals_when_seeded(demo: Principal) -> None:
    proposed = _runs_on(demo, "billing-api", ClaimStatus.PROPOSED)
    assert [(_object(claim), claim.tier) for claim in proposed] == [("k8s-prod-3", 4)]


def test_stale_runbook_shows_the_published_host_that_stays_when_seeded(
    demo: Principal,
) -> None:
    (stale,) = _runs_on(demo, "payments-api", ClaimStatus.PENDING_REVIEW)
    with rls.tenant_context(demo):
        (row,) = attach_current_values([stale])
    assert _object(stale) == "vm-pay-01"
    assert row.current_fact == "payments-api runs on k8s-prod-2."
    # The runbook was written before the CMDB refresh: approving it would put vm-pay-01
    # in the history, not replace k8s-prod-2, and the queue says so.
    assert row.current_stays is True


def test_cmdb_refresh_supersedes_the_old_host_when_seeded(demo: Principal) -> None:
    (old,) = _runs_on(demo, "payments-api", ClaimStatus.SUPERSEDED)
    (new,) = _runs_on(demo, "payments-api", ClaimStatus.PUBLISHED)
    assert [_object(old), _object(new)] == ["vm-pay-01", "k8s-prod-2"]
    assert (old.superseded_by_id, old.valid_to) == (new.pk, new.valid_from)


def test_search_finds_the_cmdb_facts_when_seeded(demo: Principal, client: Client) -> None:
    client.force_login(get_user_model().objects.get(username="reviewer"))
    response = client.get("/api/v1/search", {"q": "where does payments-api run"})
    assert response.status_code == 200, response.content
    facts = [hit["fact"] for hit in response.json()["hits"]]
    assert "payments-api runs on k8s-prod-2." in facts
    assert "payments-api runs on vm-pay-01." not in facts  # superseded: hidden now


def test_passage_facts_are_plain_text_when_seeded(demo: Principal) -> None:
    passages = _claims(demo, predicate="STATES")
    assert passages
    assert not [claim.fact_text for claim in passages if "#" in claim.fact_text.split()[0]]
    assert not [claim.fact_text for claim in passages if "**" in claim.fact_text]


def test_seeding_again_creates_nothing_when_demo_exists(demo: Principal, sources_dir: Path) -> None:
    before = _counts(demo)
    _seed(sources_dir)
    assert _counts(demo) == before
