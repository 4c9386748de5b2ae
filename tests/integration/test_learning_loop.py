"""The learning loop end to end: votes -> calibration -> activation -> the next search.

Votes go through POST /api/v1/feedback, calibration through `manage.py calibrate`, and
the searches that follow, in this process and in a second web server process, name the
weight-set version that ranked them. Activation is audited, refuses to make ranking
worse on the golden set without a confirmation, and rolls back.
"""

from __future__ import annotations

import urllib.request
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from common.errors import PermissionDenied
from retrieval import bootstrap
from retrieval.domain.ranking import SIGNALS, Weights
from retrieval.models import CalibrationRun, SearchHit, WeightActivation, WeightSet
from retrieval.services.evaluation import evaluation_run, golden_import_jsonl
from retrieval.services.weights import (
    NeedsConfirmation,
    weight_set_activate,
    weight_set_create,
    weights_reset_default,
)
from tenants import rls
from tenants.models import AuditEvent
from tenants.selectors import principal_system
from tests.support.ingest import ingest_markdown
from tests.support.tenancy import Tenant
from tests.support.web import gunicorn

DOCS = {
    "billing.md": "# Billing\n\nThe billing-api runs on k8s-prod-1.\n",
    "ledger.md": "# Ledger\n\nThe ledger-db stores the double-entry books.\n",
    "payments.md": "# Payments\n\nThe payments-api runs on k8s-prod-2 and uses the ledger-db.\n",
    "search.md": "# Search\n\nThe search-api runs on k8s-prod-3.\n",
    "gateway.md": "# Gateway\n\nThe api-gateway routes traffic to billing-api and payments-api.\n",
}
QUERIES = ("where does billing-api run", "ledger-db", "payments-api", "what runs on k8s")


@pytest.fixture
def corpus(tenant_a: Tenant, tmp_path: Path) -> Tenant:
    ingest_markdown(tenant_a, tmp_path, DOCS)
    return tenant_a


def _search(client: Client, q: str, **headers: str) -> dict:
    response = client.get("/api/v1/search", {"q": q, "k": 5}, **headers)
    assert response.status_code == 200, response.content
    return response.json()


def _vote_rank_one_helpful(client: Client, rounds: int = 2) -> int:
    """Vote every hit: the top one helpful, the rest not. Returns the number of votes."""
    votes = 0
    for _ in range(rounds):
        for q in QUERIES:
            for position, hit in enumerate(_search(client, q)["hits"]):
                response = client.post(
                    "/api/v1/feedback",
                    {"hit_id": hit["id"], "helpful": position == 0},
                    content_type="application/json",
                )
                assert response.status_code == 201, response.content
                votes += 1
    return votes


def _admin(tenant: Tenant):
    return tenant.principal(tenant.admin)


@pytest.mark.django_db
def test_votes_calibrate_into_a_candidate_that_ranks_after_activation(
    corpus: Tenant, client: Client, settings
) -> None:
    settings.VERA_LEARNING__MIN_SAMPLES = 3
    client.force_login(corpus.admin)
    group = corpus.workspace.group_id
    before = _search(client, "billing-api")
    assert before["weights"] == [{"group_id": group, "version": 0, "weight_set_id": None}]
    assert {hit["weight_version"] for hit in before["hits"]} == {0}
    assert _vote_rank_one_helpful(client) > 6

    out = StringIO()
    call_command("calibrate", "--group", group, stdout=out)
    assert f"{group}: candidate: Candidate weights v1 stored." in out.getvalue()
    with rls.tenant_context(_admin(corpus)):
        run = CalibrationRun.objects.get(group_id=group)
        candidate = run.candidate
    assert candidate is not None
    assert not candidate.active
    assert min(run.helpful, run.unhelpful) >= 3
    # The top hit is the most relevant one: relevance separates the classes.
    assert run.separations["relevance"] > 0
    assert candidate.relevance > 0
    # The understood list's fusion weight moves by the same votes, from the default 2.0.
    lift = run.separations["understood"]
    assert candidate.understood == pytest.approx(min(4.0, max(0.0, 2.0 * (1 + lift))))
    assert _search(client, "billing-api")["weights"][0]["version"] == 0  # not active yet

    with rls.tenant_context(_admin(corpus)):
        outcome = weight_set_activate(actor=_admin(corpus), weight_set_id=candidate.pk)
    assert outcome.message == "Weights v1 are active (were the default (v0))."
    after = _search(client, "billing-api")
    assert after["weights"] == [{"group_id": group, "version": 1, "weight_set_id": candidate.pk}]
    assert {hit["weight_version"] for hit in after["hits"]} == {1}
    with rls.tenant_context(_admin(corpus)):
        logged = SearchHit.objects.get(pk=after["hits"][0]["id"])
        audit = AuditEvent.objects.get(action="weights.activate")
    assert (logged.weight_set_id, logged.weight_version) == (candidate.pk, 1)
    assert audit.actor_id == corpus.admin.pk
    assert (audit.data["version"], audit.data["previous_version"]) == (1, 0)


@pytest.mark.django_db
def test_calibration_under_the_guard_changes_nothing(corpus: Tenant, client: Client) -> None:
    client.force_login(corpus.admin)
    _vote_rank_one_helpful(client, rounds=1)  # fewer than 30 helpful votes
    group = corpus.workspace.group_id
    out = StringIO()
    call_command("calibrate", "--group", group, "--activate", stdout=out)
    assert "too_few_samples" in out.getvalue()
    assert "needs 30. Weights unchanged." in out.getvalue()
    with rls.tenant_context(_admin(corpus)):
        assert not WeightSet.objects.filter(group_id=group).exists()
    assert _search(client, "billing-api")["weights"][0]["version"] == 0


def _weights(tenant: Tenant, **values: float) -> WeightSet:
    with rls.tenant_context(_admin(tenant)):
        return weight_set_create(
            group_id=tenant.workspace.group_id,
            weights=Weights.from_mapping({**dict.fromkeys(SIGNALS, 0.0), **values}),
            origin=WeightSet.Origin.MANUAL,
        )


def _evaluate(tenant: Tenant, weight_set: WeightSet | None) -> str:
    actor = _admin(tenant)
    run = evaluation_run(
        actor=actor, group_id=tenant.workspace.group_id, search=bootstrap.search(),
        embedder_model="hashing", now=timezone.now(), trigger="test",
        weight_set_id=weight_set.pk if weight_set else None,
    )  # fmt: skip
    return run.status


@pytest.mark.django_db
def test_activation_asks_for_confirmation_when_the_golden_set_scores_lower(
    corpus: Tenant,
) -> None:
    group = corpus.workspace.group_id
    with rls.tenant_context(_admin(corpus)):
        golden_import_jsonl(
            group_id=group,
            lines=[
                '{"key": "billing", "query": "where does billing-api run",'
                ' "expected_texts": ["billing-api runs on k8s-prod-1"]}',
                '{"key": "search", "query": "search-api host",'
                ' "expected_texts": ["search-api runs on k8s-prod-3"]}',
            ],
        )
    relevant = _weights(corpus, relevance=1.0)
    # Every hit in this corpus has the same tier, age and confidence: a blend without
    # relevance cannot tell the right fact from the others, and ranks by claim id.
    blind = _weights(corpus, recency=1.0)
    unmeasured = _weights(corpus, relevance=0.5, confidence=0.5)
    assert _evaluate(corpus, None) == "passed"
    assert _evaluate(corpus, relevant) == "passed"
    _evaluate(corpus, blind)
    actor = _admin(corpus)
    with rls.tenant_context(actor):
        weight_set_activate(actor=actor, weight_set_id=relevant.pk)
        with pytest.raises(NeedsConfirmation, match=r"v2 scored nDCG@10 .* below v1 at"):
            weight_set_activate(actor=actor, weight_set_id=blind.pk)
        with pytest.raises(NeedsConfirmation, match="v3 have not been evaluated"):
            weight_set_activate(actor=actor, weight_set_id=unmeasured.pk)
        assert WeightSet.objects.get(group_id=group, active=True).pk == relevant.pk
        confirmed = weight_set_activate(actor=actor, weight_set_id=blind.pk, confirm=True)
        assert confirmed.message == "Weights v2 are active (were v1)."
        # Rolling back is activating the earlier set again; resetting returns to v0.
        assert weight_set_activate(actor=actor, weight_set_id=relevant.pk).previous == blind
        assert weights_reset_default(actor=actor, group_id=group) == (
            "The built-in default weights (v0) are in use (were v1)."
        )
        history = list(
            WeightActivation.objects.order_by("pk").values_list("weight_set__version", flat=True)
        )
        audited = AuditEvent.objects.filter(action__startswith="weights.").count()
    assert history == [1, 2, 1, None]
    assert audited == 4


@pytest.mark.django_db
def test_weight_sets_are_invisible_and_unactivatable_across_tenants(
    corpus: Tenant, tenant_b: Tenant
) -> None:
    mine = _weights(corpus, relevance=1.0)
    other = _admin(tenant_b)
    with rls.tenant_context(other):
        assert not WeightSet.objects.exists()
        with pytest.raises(WeightSet.DoesNotExist):
            weight_set_activate(actor=other, weight_set_id=mine.pk)
    reviewer = corpus.principal(corpus.reviewer)
    with rls.tenant_context(reviewer), pytest.raises(PermissionDenied):
        weight_set_activate(actor=reviewer, weight_set_id=mine.pk)


@pytest.mark.django_db
def test_eval_golden_exits_non_zero_below_a_floor(corpus: Tenant) -> None:
    group = corpus.workspace.group_id
    with rls.tenant_context(_admin(corpus)):
        golden_import_jsonl(
            group_id=group,
            lines=['{"key": "x", "query": "billing-api", "expected_texts": ["no such text"]}'],
        )
    out = StringIO()
    with pytest.raises(CommandError, match=f"evaluation failed for {group}"):
        call_command("eval_golden", "--group", group, "--fail-under", "hit_at_10=0.5", stdout=out)
    assert "failed (weights v0, 1 queries" in out.getvalue()
    assert "hit_at_10 0.0000 is below the floor 0.5000" in out.getvalue()
    call_command("eval_golden", "--group", group, stdout=StringIO())  # no floor: passes


# --- a second web process --------------------------------------------------------------


def _remote_search(url: str, key: str) -> dict:
    import json

    request = urllib.request.Request(  # noqa: S310
        f"{url}/api/v1/search?q=billing-api&k=3", headers={"Authorization": f"Bearer {key}"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
        return json.loads(response.read())


@pytest.mark.django_db(transaction=True)
def test_activation_takes_effect_in_another_web_process_at_once(
    tenant_a: Tenant, tmp_path: Path, app_database_url: str
) -> None:
    ingest_markdown(tenant_a, tmp_path, DOCS)
    key = tenant_a.issue_key(owner=tenant_a.admin).plaintext
    chosen = _weights(tenant_a, relevance=0.7, confidence=0.3)
    with gunicorn(database_url=app_database_url, log=tmp_path / "web.log") as url:
        assert _remote_search(url, key)["weights"][0]["version"] == 0
        actor = _admin(tenant_a)
        with rls.tenant_context(actor):
            weight_set_activate(actor=actor, weight_set_id=chosen.pk)
        # No restart and no wait: the other process reads the active set per search.
        body = _remote_search(url, key)
        assert body["weights"][0] == {
            "group_id": tenant_a.workspace.group_id, "version": 1, "weight_set_id": chosen.pk,
        }  # fmt: skip
        assert {hit["weight_version"] for hit in body["hits"]} == {1}
        with rls.tenant_context(actor):
            weights_reset_default(actor=actor, group_id=tenant_a.workspace.group_id)
        assert _remote_search(url, key)["weights"][0]["version"] == 0
    with rls.tenant_context(principal_system("test", group_ids=[tenant_a.workspace.group_id])):
        versions = set(SearchHit.objects.values_list("weight_version", flat=True))
    assert versions == {0, 1}
