"""A workspace admin opens the Quality page in Chromium: charts, worst queries, weight sets."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect

from retrieval import bootstrap
from retrieval.domain.ranking import DEFAULT_WEIGHTS, Weights
from retrieval.models import EvaluationRun, WeightSet
from retrieval.services.evaluation import evaluation_run, golden_import_jsonl
from retrieval.services.weights import weight_set_activate, weight_set_create
from tenants import rls
from tests.support.browser import sign_in
from tests.support.ingest import ingest_markdown
from tests.support.tenancy import Tenant

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
GOLDEN = [
    '{"key": "billing", "query": "where does billing-api run",'
    ' "expected_texts": ["billing-api runs on k8s-prod-1"]}',
    '{"key": "mail", "query": "where does the mail relay run",'
    ' "expected_texts": ["mail-relay runs on"]}',
]


@pytest.fixture
def measured(tenant_a: Tenant, tmp_path: Path) -> Tenant:
    """An ingested corpus with a golden set, a month of recorded runs (one failed), two
    activations and a real evaluation of what ranks now."""
    billing = "# Billing\n\nThe billing-api runs on k8s-prod-1.\n"
    ingest_markdown(tenant_a, tmp_path, {"billing.md": billing})
    actor = tenant_a.principal(tenant_a.admin)
    group_id = tenant_a.workspace.group_id
    with rls.tenant_context(actor):
        golden_import_jsonl(group_id=group_id, lines=GOLDEN)
        for days_ago, ndcg, status in ((28, 0.42, "passed"), (14, 0.31, "failed")):
            started = timezone.now() - dt.timedelta(days=days_ago)
            EvaluationRun.objects.create(
                group_id=group_id, trigger="test", status=status, started_at=started,
                finished_at=started, queries=2, hit_at_10=ndcg + 0.2, mrr=ndcg, ndcg_at_10=ndcg,
            )  # fmt: skip
        for relevance in (0.6, 1.0):
            weights = Weights.from_mapping({**DEFAULT_WEIGHTS.as_dict(), "relevance": relevance})
            chosen = weight_set_create(
                group_id=group_id, weights=weights, origin=WeightSet.Origin.MANUAL
            )
            weight_set_activate(actor=actor, weight_set_id=chosen.pk, confirm=True)
    evaluation_run(
        actor=actor, group_id=group_id, search=bootstrap.search(), embedder_model="hashing",
        now=timezone.now(), trigger="test",
    )  # fmt: skip
    return tenant_a


def test_quality_page_draws_scores_and_weights_over_time(
    page: Page, live_server, measured: Tenant
) -> None:
    sign_in(page, live_server.url, measured.admin.get_username())
    page.get_by_role("link", name="Quality").click()
    expect(page.get_by_role("heading", name="Search quality")).to_be_visible()

    scores = page.locator("#chart-scores svg")
    expect(scores.locator("text", has_text="nDCG@10").first).to_be_visible()
    # One line per metric, each through the three runs; the failed run is its own dot.
    for series in range(3):
        expect(scores.locator(f"g.serie-{series} path.line")).to_be_visible()
        expect(scores.locator(f"g.serie-{series} circle.dot")).to_have_count(3)
    expect(scores.locator("g.serie-3 circle.dot")).to_have_count(1)
    weights = page.locator("#chart-weights svg")
    for series in range(6):
        expect(weights.locator(f"g.serie-{series} path.line")).to_be_visible()
    expect(weights.locator("g.serie-6 circle.dot")).to_have_count(2)  # two activations
    expect(page.locator("#worst-queries tr", has_text="mail relay")).to_be_visible()
    expect(page.locator("#weights-v2")).to_contain_text("active")
    page.screenshot(path=str(ARTIFACTS / "quality_page.png"), full_page=True)

    # The range tabs swap just the charts (htmx) and keep the address shareable.
    page.get_by_role("link", name="last 30 days").click()
    expect(page).to_have_url(re.compile(r"range=30"))
    expect(page.locator("#charts nav a.active")).to_have_text("last 30 days")
    expect(page.locator("#worst-queries")).to_be_visible()
