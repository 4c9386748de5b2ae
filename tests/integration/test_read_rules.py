"""Who reads what, proven in SQL as the application role (row-level security, no view):

- a role on a scope reaches it and every scope under it;
- a member of a workspace or project reads the published knowledge of the scopes above
  it (claims that were ever valid, their evidence, episodes, sources and entities, the
  search index), and nothing else of them: not what waits for review, never a write;
- a personal scope is its owner's alone; another tenant's rows are never visible.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db import DatabaseError, connection, transaction

from curation.models import Claim, Entity, Episode, Evidence, Source
from curation.services.sources import source_create
from curation.tasks import process_outbox
from curation.usecases import ingest_now
from retrieval.models import SearchDocument
from tenants import rls
from tenants.domain.access import Principal
from tenants.domain.scopes import Role, ScopeKind
from tenants.selectors import principal_for_user
from tenants.services.scopes import scope_create
from tests.support.tenancy import Tenant

pytestmark = pytest.mark.django_db

PUBLISHED_ONLY = {"published", "superseded", "retracted"}


def _org_knowledge(tenant: Tenant, root: Path) -> None:
    """The organisation publishes one document (tier 1) and has one waiting (tier 3)."""
    system = Principal(label="t", roles={tenant.org.group_id: Role.OWNER}, user_id=tenant.admin.pk)
    for name, tier, text in (
        ("handbook", 1, "# Billing\n\nThe billing-api runs on k8s-prod-1.\n"),
        ("rumours", 3, "# Ledger\n\nThe ledger-api runs on k8s-secret-9.\n"),
    ):
        folder = root / name
        folder.mkdir(parents=True)
        (folder / f"{name}.md").write_text(text, encoding="utf-8")
        with rls.tenant_context(system):
            source = source_create(
                actor=system, group_id=tenant.org.group_id, name=name, kind="markdown",
                config={"root": str(folder)}, trust_tier=tier,
            )  # fmt: skip
        report = ingest_now(source_id=source.pk, group_id=tenant.org.group_id)
        assert report is not None
        assert not report.error
    while process_outbox():
        pass


def test_a_workspace_member_reads_the_organisations_published_knowledge_only(
    tenant_a: Tenant, tenant_b: Tenant, tmp_path: Path
) -> None:
    _org_knowledge(tenant_a, tmp_path)
    _org_knowledge(tenant_b, tmp_path / "b")
    org = tenant_a.org.group_id
    viewer = principal_for_user(tenant_a.viewer.pk, label="viewer")
    assert viewer.reads == {org}
    assert org not in viewer.roles
    owner = Principal(label="t", roles={org: Role.OWNER})
    with rls.tenant_context(owner):
        statuses = set(Claim.objects.values_list("status", flat=True))
        everything = Claim.objects.count()
    assert statuses - PUBLISHED_ONLY  # the organisation has something waiting for review

    with rls.tenant_context(viewer):
        assert rls.current_group_ids() == sorted(viewer.group_ids)
        claims = list(Claim.objects.filter(group_id=org).values_list("status", flat=True))
        assert claims
        assert set(claims) <= PUBLISHED_ONLY
        assert len(claims) < everything
        texts = " ".join(Evidence.objects.filter(group_id=org).values_list("snippet", flat=True))
        assert "k8s-prod-1" in texts
        assert "k8s-secret-9" not in texts
        assert {s.name for s in Source.objects.filter(group_id=org)} == {"handbook"}
        names = set(Entity.objects.filter(group_id=org).values_list("canonical_name", flat=True))
        assert "ledger-api" not in names
        assert "billing-api" in names
        assert Episode.objects.filter(group_id=org).count() == 1
        assert SearchDocument.objects.filter(group_id=org).exists()
        # Another tenant's organisation: nothing.
        assert not Claim.objects.filter(group_id=tenant_b.org.group_id).exists()
        # Read-only: an update touches no row, an insert is refused by the policy.
        assert Claim.objects.filter(group_id=org).update(confidence=0.01) == 0
        with (
            pytest.raises(DatabaseError, match="row-level security"),
            transaction.atomic(),
            connection.cursor() as cursor,
        ):
            cursor.execute(
                "INSERT INTO curation_entity (group_id, canonical_name, entity_type)"
                " VALUES (%s, 'forged', 'service')",
                [org],
            )


def test_roles_reach_down_and_a_personal_scope_is_its_owners_alone(tenant_a: Tenant) -> None:
    project = scope_create(kind=ScopeKind.PROJECT, name="P", parent_id=tenant_a.workspace.pk)
    admin = principal_for_user(tenant_a.admin.pk, label="admin")
    assert admin.roles[project.group_id] == Role.ADMIN  # a workspace role reaches its projects
    personal = [g for g in admin.roles if g.startswith("u:")]
    viewer = principal_for_user(tenant_a.viewer.pk, label="viewer")
    assert not set(personal) & (set(viewer.roles) | viewer.reads)
    with rls.tenant_context(viewer), connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('vera.read_groups', true)")
        assert cursor.fetchone()[0] == tenant_a.org.group_id
