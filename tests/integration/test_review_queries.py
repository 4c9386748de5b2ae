"""The queue pages stay within a fixed number of queries however long the queue is."""

from __future__ import annotations

import pytest
from django.test import Client

from curation.domain.tiers import ClaimStatus
from curation.models import Claim
from tenants import rls
from tests.support.bulk_claims import make_pending
from tests.support.tenancy import Tenant

pytestmark = pytest.mark.django_db
# session, user, memberships and scope tree (5), the RLS savepoint and setting (4), the page
# count, queue counts (2), filter options (2), the page, its evidence and the values it
# would supersede (3): 18 in all.
MAX_QUERIES = 18


@pytest.fixture
def thousand(tenant_a: Tenant) -> Tenant:
    principal = tenant_a.principal(tenant_a.admin)
    group = tenant_a.workspace.group_id
    make_pending(principal=principal, group_id=group, count=1000)
    make_pending(principal=principal, group_id=group, count=1000, status=ClaimStatus.PROPOSED)
    # Published claims that reprocessing no longer found: the re-check queue.
    rechecks = make_pending(
        principal=principal, group_id=group, count=1000, status=ClaimStatus.PUBLISHED
    )
    with rls.tenant_context(principal):
        Claim.objects.filter(pk__in=rechecks).update(recheck="no longer found when read again")
    return tenant_a


@pytest.mark.parametrize(
    "query",
    [
        "",
        "?page=2",
        "?queue=proposals",
        "?queue=rechecks",
        "?sort=newest&predicate=RUNS_ON",
        "?entity=svc-9&tier=3",
        "?queue=merges",
    ],
)
def test_queue_page_queries_are_bounded_with_a_thousand_pending(
    thousand: Tenant, client: Client, django_assert_max_num_queries, query: str
) -> None:
    client.force_login(thousand.reviewer)
    with django_assert_max_num_queries(MAX_QUERIES):
        response = client.get(f"/review/{query}")
    assert response.status_code == 200


def test_the_first_page_shows_fifty_of_the_thousand(thousand: Tenant, client: Client) -> None:
    client.force_login(thousand.reviewer)
    html = client.get("/review/").content.decode()
    assert html.count('class="item"') == 50
    assert "page 1 of 20 (1000 items)" in html


def test_an_approval_costs_a_bounded_number_of_queries(
    thousand: Tenant, client: Client, django_assert_max_num_queries
) -> None:
    with rls.tenant_context(thousand.principal(thousand.admin)):
        claim = Claim.objects.filter(status=ClaimStatus.PENDING_REVIEW).first()
    assert claim is not None
    client.force_login(thousand.reviewer)
    with django_assert_max_num_queries(30):
        response = client.post(
            f"/review/claims/{claim.pk}/approve", {"version": claim.version}, HTTP_HX_REQUEST="true"
        )
    assert response.status_code == 200


def test_the_recheck_queue_shows_fifty_of_its_thousand(thousand: Tenant, client: Client) -> None:
    client.force_login(thousand.reviewer)
    html = client.get("/review/?queue=rechecks").content.decode()
    assert html.count('class="item"') == 50
    assert "page 1 of 20 (1000 items)" in html
    assert 'data-queue="rechecks">1000<' in html


def test_keeping_a_recheck_costs_a_bounded_number_of_queries(
    thousand: Tenant, client: Client, django_assert_max_num_queries
) -> None:
    with rls.tenant_context(thousand.principal(thousand.admin)):
        claim = Claim.objects.exclude(recheck="").first()
    assert claim is not None
    client.force_login(thousand.reviewer)
    # Session, user, memberships and scope tree (4), savepoints and the RLS setting, the
    # claim locked, its update, the audit event, the queue counts (2): 15 when written.
    with django_assert_max_num_queries(16):
        response = client.post(
            f"/review/rechecks/{claim.pk}/keep", {"version": claim.version}, HTTP_HX_REQUEST="true"
        )
    assert response.status_code == 200
