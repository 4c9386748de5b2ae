"""Sealed snapshots of a workspace, built as the maintenance lane builds them."""

from __future__ import annotations

from retrieval import bootstrap
from retrieval.models import Snapshot
from retrieval.services.snapshots import Pinning, snapshot_build, snapshot_take
from tenants import rls
from tenants.selectors import principal_system
from tests.support.tenancy import Tenant


def seal(snapshot: Snapshot) -> Snapshot:
    """Build the taken `snapshot` as the maintenance lane does (a system principal, this
    deployment's embedders, reranking and fusion pinned); returns it sealed."""
    providers = bootstrap.providers()
    pinning = Pinning(
        catalog=providers.embedders(), reranking=providers.reranking(), fusion=providers.fusion()
    )
    actor = principal_system("t", group_ids=[snapshot.group_id])
    built = snapshot_build(snapshot.pk, actor=actor, pinning=pinning)
    assert built is not None
    assert built.status == Snapshot.Status.SEALED
    return built


def sealed_snapshot(tenant: Tenant, *, name: str) -> Snapshot:
    """A snapshot of the tenant's workspace, taken by its admin and sealed (`seal`)."""
    admin = tenant.principal(tenant.admin)
    with rls.tenant_context(admin):
        taken = snapshot_take(actor=admin, group_id=tenant.workspace.group_id, name=name)
    return seal(taken)
