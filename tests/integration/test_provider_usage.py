"""Provider usage per workspace and day: metered in any process, flushed by beat's task,
read on the admin's cost page by that workspace's admins only (RLS)."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest
from django.test import Client
from django.utils import timezone

from retrieval.adapters.embedders.cached import CachedEmbedder
from retrieval.adapters.hashing_embedder import HashingEmbedder
from retrieval.domain.usage import SHARED, UsageTotal
from retrieval.models import ProviderUsage
from retrieval.tasks import flush_provider_usage
from tenants import rls
from tenants.domain.access import Principal
from tenants.domain.scopes import Role
from tests.support.tenancy import Tenant
from vera import wiring

pytestmark = pytest.mark.django_db
COST_PAGE = "/admin/retrieval/providerusage/"


@pytest.fixture
def ledger() -> object:
    """This test database's ledger, emptied of what earlier tests metered."""
    ledger = wiring.usage_ledger()
    ledger.drain()
    return ledger


def _rows(tenant: Tenant) -> list[ProviderUsage]:
    with rls.tenant_context(tenant.principal(tenant.admin)):
        return list(ProviderUsage.objects.all())


def _metered() -> CachedEmbedder:
    """A provider embedder as wiring builds one (cache, the process's meter); the test
    settings' hashing embedder is local and unwrapped, so it is wrapped here."""
    return CachedEmbedder(HashingEmbedder(), meter=wiring.provider_meter())


def _staff_client(client: Client, user: object) -> Client:
    """Signed in to the admin: staff, with no model permission (the workspace role decides)."""
    user.is_staff = True  # type: ignore[attr-defined]
    user.save()  # type: ignore[attr-defined]
    client.force_login(user)  # type: ignore[arg-type]
    return client


def _embed(tenant: Tenant) -> None:
    """Embedding work in the tenant's context, as a search or an index write does."""
    with rls.tenant_context(tenant.principal(tenant.admin)):
        _metered().embed([f"ledger {uuid.uuid4().hex}"])


def test_embedding_is_charged_to_its_workspace_when_flushed(
    ledger: object, tenant_a: Tenant, tenant_b: Tenant
) -> None:
    _embed(tenant_a)
    assert flush_provider_usage() >= 1
    (row,) = _rows(tenant_a)
    assert (row.group_id, row.day) == (tenant_a.workspace.group_id, timezone.now().date())
    assert row.calls >= 1
    assert row.tokens > 0
    assert _rows(tenant_b) == []


def test_flushes_add_to_the_days_row_when_it_exists(ledger: object, tenant_a: Tenant) -> None:
    _embed(tenant_a)
    flush_provider_usage()
    (first,) = _rows(tenant_a)
    _embed(tenant_a)
    flush_provider_usage()
    (second,) = _rows(tenant_a)
    assert second.calls > first.calls
    assert second.tokens > first.tokens


def test_work_for_several_workspaces_is_charged_to_shared_when_flushed(
    ledger: object, tenant_a: Tenant, tenant_b: Tenant
) -> None:
    both = Principal(
        label="test", roles={tenant_a.workspace.group_id: Role.ADMIN,
                             tenant_b.workspace.group_id: Role.ADMIN},
    )  # fmt: skip
    with rls.tenant_context(both):
        _metered().embed([f"shared {uuid.uuid4().hex}"])
    flush_provider_usage()
    assert _rows(tenant_a) == _rows(tenant_b) == []
    only_shared = Principal(label="test", roles={SHARED: Role.OWNER})
    with rls.tenant_context(only_shared):
        assert ProviderUsage.objects.filter(group_id=SHARED, tokens__gt=0).exists()


def test_cost_page_shows_only_the_admins_workspace_with_totals(
    ledger: object, tenant_a: Tenant, tenant_b: Tenant, client: Client
) -> None:
    day = timezone.now().date()
    for tenant, cost in ((tenant_a, 0.125), (tenant_b, 7.5)):
        wiring.usage_ledger().add(
            UsageTotal(group_id=tenant.workspace.group_id, day=day, provider="openai",
                       model="text-embedding-3-small", calls=3, tokens=6_250_000, cost_usd=cost)
        )  # fmt: skip
    wiring.usage_ledger().add(
        UsageTotal(group_id=tenant_a.workspace.group_id, day=day - dt.timedelta(days=1),
                   provider="openai", model="text-embedding-3-small", calls=1, tokens=10,
                   cost_usd=0.25)
    )  # fmt: skip
    flush_provider_usage()
    page = _staff_client(client, tenant_a.admin).get(COST_PAGE).content.decode()
    assert "<strong>4</strong> calls" in page
    assert "<strong>6250010</strong> tokens" in page
    assert "<strong>$0.3750</strong>" in page
    assert tenant_b.workspace.group_id not in page


def test_cost_page_is_refused_when_the_user_administers_no_workspace(
    tenant_a: Tenant, client: Client
) -> None:
    assert _staff_client(client, tenant_a.viewer).get(COST_PAGE).status_code == 403
