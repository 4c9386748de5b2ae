"""The Quality page: who may see it, what its charts and tables show, and its writes.

Data is built through the services (ingest, golden import, `evaluation_run`, weight
sets and their activation); a few chart-only runs are stored directly, as a recorded
history would be. Every request goes through the real middleware, so RLS applies.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest
from django.test import Client
from django.utils import timezone

from curation.models import Claim
from retrieval import bootstrap
from retrieval.domain.ranking import DEFAULT_WEIGHTS, Weights
from retrieval.models import EvaluationRun, WeightActivation, WeightSet
from retrieval.selectors import evaluation_points, weights_timeline
from retrieval.services.evaluation import evaluation_run, golden_import_jsonl
from retrieval.services.weights import weight_set_activate, weight_set_create
from tenants import rls
from tenants.models import AuditEvent
from tests.support.ingest import ingest_markdown
from tests.support.tenancy import Tenant

pytestmark = pytest.mark.django_db

URL = "/quality/"
DOCS = {
    "billing.md": "# Billing\n\nThe billing-api runs on k8s-prod-1.\n",
    "ledger.md": "# Ledger\n\nThe ledger-db stores the double-entry books.\n",
    "search.md": "# Search\n\nThe search-api runs on k8s-prod-3.\n",
}
GOLDEN = [
    '{"key": "billing", "query": "where does billing-api run",'
    ' "expected_texts": ["billing-api runs on k8s-prod-1"]}',
    '{"key": "ledger", "query": "ledger-db books", "expected_texts": ["double-entry books"]}',
    # Nothing in the corpus says this: the worst query of every run.
    '{"key": "mail", "query": "where does the mail relay run",'
    ' "expected_texts": ["mail-relay runs on"]}',
]


def _admin(tenant: Tenant):
    return tenant.principal(tenant.admin)


def _weights(tenant: Tenant, **values: float) -> WeightSet:
    with rls.tenant_context(_admin(tenant)):
        return weight_set_create(
            group_id=tenant.workspace.group_id,
            weights=Weights.from_mapping(
                {**dict.fromkeys(DEFAULT_WEIGHTS.as_dict(), 0.0), **values}
            ),
            origin=WeightSet.Origin.MANUAL,
        )


def _activate(tenant: Tenant, weight_set: WeightSet) -> None:
    actor = _admin(tenant)
    with rls.tenant_context(actor):
        weight_set_activate(actor=actor, weight_set_id=weight_set.pk, confirm=True)


def _recorded_run(
    tenant: Tenant, *, days_ago: float, ndcg: float, failed: bool = False
) -> EvaluationRun:
    """A run as the history holds it (chart data only: no per-query results)."""
    started = timezone.now() - dt.timedelta(days=days_ago)
    with rls.tenant_context(_admin(tenant)):
        return EvaluationRun.objects.create(
            group_id=tenant.workspace.group_id, trigger="test",
            status="failed" if failed else "passed", started_at=started,
            finished_at=started + dt.timedelta(seconds=2), queries=3,
            hit_at_10=min(1.0, ndcg + 0.2), mrr=ndcg, ndcg_at_10=ndcg,
        )  # fmt: skip


def _evaluate(tenant: Tenant) -> EvaluationRun:
    return evaluation_run(
        actor=_admin(tenant), group_id=tenant.workspace.group_id, search=bootstrap.search(),
        embedder_model="hashing", now=timezone.now(), trigger="test",
    )  # fmt: skip


@pytest.fixture
def corpus(tenant_a: Tenant, tmp_path: Path) -> Tenant:
    """Acme's workspace with three ingested, indexed documents and a golden set of three."""
    ingest_markdown(tenant_a, tmp_path, DOCS)
    actor = _admin(tenant_a)
    with rls.tenant_context(actor):
        golden_import_jsonl(group_id=tenant_a.workspace.group_id, lines=GOLDEN)
    return tenant_a


@pytest.fixture
def history(tenant_a: Tenant) -> Tenant:
    """Four recorded runs (one failed, one 200 days old) and two activations."""
    _recorded_run(tenant_a, days_ago=200, ndcg=0.41, failed=True)
    _recorded_run(tenant_a, days_ago=20, ndcg=0.55)
    _recorded_run(tenant_a, days_ago=10, ndcg=0.35, failed=True)
    _recorded_run(tenant_a, days_ago=1, ndcg=0.72)
    _activate(tenant_a, _weights(tenant_a, relevance=0.6, authority=0.4))
    _activate(tenant_a, _weights(tenant_a, relevance=1.0))
    return tenant_a


def _page(client: Client, tenant: Tenant, user_attr: str = "reviewer", **params: str):
    client.force_login(getattr(tenant, user_attr))
    return client.get(URL, params)


def _svgs(html: str) -> list[str]:
    return re.findall(r"<svg\b.*?</svg>", html, flags=re.DOTALL)


# --- who may look ---------------------------------------------------------------------------


def test_page_is_shown_when_the_user_reviews_the_workspace(client: Client, history: Tenant) -> None:
    response = _page(client, history)
    assert response.status_code == 200
    html = response.content.decode()
    assert "Search quality" in html
    assert f'href="{URL}"' in html  # the nav links to it


def test_page_is_refused_when_the_user_only_views_the_workspace(
    client: Client, tenant_a: Tenant
) -> None:
    assert _page(client, tenant_a, "viewer").status_code == 403


def test_page_is_refused_when_the_group_is_another_tenants(
    client: Client, tenant_a: Tenant, tenant_b: Tenant
) -> None:
    response = _page(client, tenant_a, group=tenant_b.workspace.group_id)
    assert response.status_code == 403


def test_other_tenants_runs_and_activations_are_invisible_when_read_by_their_group_id(
    history: Tenant, tenant_b: Tenant
) -> None:
    # Even a read naming Acme's group id sees nothing of it as Globex: RLS filters.
    with rls.tenant_context(tenant_b.principal(tenant_b.reviewer)):
        group = history.workspace.group_id
        assert evaluation_points(group_id=group, since=None) == []
        assert [step.version for step in weights_timeline(group_id=group, since=None)] == [0]


def test_workspace_selector_is_offered_when_the_user_reviews_several(
    client: Client, tenant_a: Tenant
) -> None:
    from tenants.domain.scopes import Role, ScopeKind
    from tenants.services.scopes import membership_grant, scope_create

    second = scope_create(
        kind=ScopeKind.WORKSPACE, name="Acme WS 2", parent_id=tenant_a.workspace.parent_id
    )
    membership_grant(user_id=tenant_a.reviewer.pk, scope_id=second.pk, role=Role.REVIEWER)
    html = _page(client, tenant_a, group=second.group_id).content.decode()
    assert f'<option value="{second.group_id}" selected>' in html
    assert f'<option value="{tenant_a.workspace.group_id}" >' in html


# --- what it shows --------------------------------------------------------------------------


def test_charts_are_svg_with_every_series_when_runs_and_activations_exist(
    client: Client, history: Tenant
) -> None:
    html = _page(client, history).content.decode()
    scores, weights = _svgs(html)
    for series in ("hit@10", "MRR", "nDCG@10", "failed run"):
        assert f">{series}</text>" in scores
    for series in (*DEFAULT_WEIGHTS.as_dict(), "activation"):
        assert f">{series}</text>" in weights
    assert "<script" not in html.split("</header>", 1)[1]  # no chart script, no CDN
    assert weights.count("v2 by user:acme-admin") == 1  # the activation marker's label


def test_failed_runs_are_marked_when_a_run_fell_below_a_floor(
    client: Client, history: Tenant
) -> None:
    with rls.tenant_context(_admin(history)):
        failed = EvaluationRun.objects.get(status="failed", ndcg_at_10=0.35)
    scores = _svgs(_page(client, history).content.decode())[0]
    assert f"run {failed.pk} below a floor" in scores


def test_range_leaves_older_runs_out_when_shorter_than_their_age(
    client: Client, history: Tenant
) -> None:
    with rls.tenant_context(_admin(history)):
        old = EvaluationRun.objects.get(ndcg_at_10=0.41)
    assert f"run {old.pk} below a floor" not in _page(client, history, range="90").content.decode()
    assert f"run {old.pk} below a floor" in _page(client, history, range="all").content.decode()


def test_worst_queries_come_lowest_ndcg_first_with_links_to_their_hits(
    client: Client, corpus: Tenant
) -> None:
    _evaluate(corpus)
    html = _page(client, corpus).content.decode()
    table = html.split('id="worst-queries"', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r'<a href="/search/\?q=([^"]+)">', table)
    assert rows[0] == "where%20does%20the%20mail%20relay%20run"
    assert len(rows) == 3
    with rls.tenant_context(_admin(corpus)):
        billing = Claim.objects.filter(fact_text__contains="billing-api runs on").first()
    assert f'href="/claims/{billing.pk}/"' in table


def test_weight_sets_list_their_latest_evaluation_when_evaluated(
    client: Client, corpus: Tenant
) -> None:
    chosen = _weights(corpus, relevance=1.0)
    run = evaluation_run(
        actor=_admin(corpus), group_id=corpus.workspace.group_id, search=bootstrap.search(),
        embedder_model="hashing", now=timezone.now(), trigger="test", weight_set_id=chosen.pk,
    )  # fmt: skip
    html = _page(client, corpus).content.decode()
    row = html.split('id="weights-v1"', 1)[1].split("</tr>", 1)[0]
    assert f"{run.ndcg_at_10:.4f}" in row
    assert "not evaluated" in html.split('id="weights-v0"', 1)[1].split("</tr>", 1)[0]


def test_htmx_range_request_gets_only_the_charts_fragment(client: Client, history: Tenant) -> None:
    client.force_login(history.reviewer)
    response = client.get(URL, {"range": "30"}, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in html
    assert "Weight sets" not in html
    assert len(_svgs(html)) == 2
    assert 'class="active">last 30 days</a>' in html


def test_boosted_navigation_gets_the_whole_page(client: Client, history: Tenant) -> None:
    client.force_login(history.reviewer)
    html = client.get(URL, HTTP_HX_REQUEST="true", HTTP_HX_BOOSTED="true").content.decode()
    assert "<html" in html


def test_page_reads_in_a_bounded_number_of_queries(
    client: Client, history: Tenant, django_assert_max_num_queries
) -> None:
    client.force_login(history.reviewer)
    with django_assert_max_num_queries(18):
        assert client.get(URL).status_code == 200


# --- switching weights and evaluating -------------------------------------------------------


def test_buttons_are_hidden_when_the_user_is_a_reviewer(client: Client, history: Tenant) -> None:
    html = _page(client, history).content.decode()
    assert "Roll back" not in html
    assert ">Evaluate<" not in html


def test_activation_is_refused_when_the_user_is_a_reviewer(client: Client, history: Tenant) -> None:
    client.force_login(history.reviewer)
    with rls.tenant_context(_admin(history)):
        first = WeightSet.objects.get(version=1)
    response = client.post(
        f"/quality/weights/{first.pk}/activate", {"group": history.workspace.group_id}
    )
    assert response.status_code == 403


def test_admin_activates_weights_through_the_service_when_posting(
    client: Client, tenant_a: Tenant
) -> None:
    chosen = _weights(tenant_a, relevance=0.7, confidence=0.3)
    client.force_login(tenant_a.admin)
    response = client.post(
        f"/quality/weights/{chosen.pk}/activate",
        {"group": tenant_a.workspace.group_id, "reason": "better recall"},
        follow=True,
    )
    assert "Weights v1 are active (were the default (v0))." in response.content.decode()
    with rls.tenant_context(_admin(tenant_a)):
        assert WeightSet.objects.get(pk=chosen.pk).active
        event = AuditEvent.objects.get(action="weights.activate")
        assert WeightActivation.objects.get().reason == "better recall"
    assert (event.actor_id, event.data["reason"]) == (tenant_a.admin.pk, "better recall")


def test_doubt_is_shown_with_a_confirm_button_when_the_set_was_never_evaluated(
    client: Client, corpus: Tenant
) -> None:
    chosen = _weights(corpus, relevance=1.0)
    client.force_login(corpus.admin)
    response = client.post(
        f"/quality/weights/{chosen.pk}/activate", {"group": corpus.workspace.group_id}
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert "Weights v1 have not been evaluated on the golden set" in html
    assert 'name="confirm" value="1"' in html
    with rls.tenant_context(_admin(corpus)):
        assert not WeightSet.objects.get(pk=chosen.pk).active


def test_confirming_activates_when_reposted_with_confirm(client: Client, corpus: Tenant) -> None:
    chosen = _weights(corpus, relevance=1.0)
    client.force_login(corpus.admin)
    response = client.post(
        f"/quality/weights/{chosen.pk}/activate",
        {"group": corpus.workspace.group_id, "confirm": "1", "reason": "measured by hand"},
        follow=True,
    )
    assert "Weights v1 are active (were the default (v0))." in response.content.decode()
    with rls.tenant_context(_admin(corpus)):
        event = AuditEvent.objects.get(action="weights.activate")
    assert "have not been evaluated" in event.data["confirmed_doubt"]


def test_roll_back_to_default_goes_through_weights_reset_default(
    client: Client, history: Tenant
) -> None:
    client.force_login(history.admin)
    response = client.post(
        "/quality/weights/default", {"group": history.workspace.group_id}, follow=True
    )
    assert "The built-in default weights (v0) are in use (were v2)." in response.content.decode()
    with rls.tenant_context(_admin(history)):
        assert not WeightSet.objects.filter(active=True).exists()


def test_evaluate_runs_the_golden_set_and_shows_the_runs_message(
    client: Client, corpus: Tenant
) -> None:
    chosen = _weights(corpus, relevance=1.0)
    client.force_login(corpus.admin)
    response = client.post(
        "/quality/evaluate",
        {"group": corpus.workspace.group_id, "weight_set": str(chosen.pk)},
        follow=True,
    )
    with rls.tenant_context(_admin(corpus)):
        run = EvaluationRun.objects.get(weight_set=chosen)
    assert (run.trigger, run.queries) == ("portal", 3)
    assert f"Evaluation of v1: {run.status}. {run.message}" in response.content.decode()
