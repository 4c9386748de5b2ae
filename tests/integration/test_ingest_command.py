"""`manage.py ingest --path` changes the source as an admin's edit would: checked against
the source's policy (a folder outside the allowed roots is refused and nothing is read)
and audited."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from curation.models import Claim, Source
from tenants import rls
from tenants.models import AuditEvent
from tests.support.tenancy import Tenant, markdown_source

pytestmark = pytest.mark.django_db


def _config(tenant: Tenant, source_id: int) -> dict[str, object]:
    with rls.tenant_context(tenant.principal(tenant.admin)):
        return dict(Source.objects.get(pk=source_id).config)


def test_a_path_in_reach_is_the_sources_audited_change_then_ingested(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    (second / "billing.md").write_text("# Billing\n\nThe billing-api runs on k8s-prod-1.\n")
    source_id = markdown_source(tenant_a, first, tier=1)
    out = io.StringIO()
    call_command("ingest", str(source_id), "--path", str(second), stdout=out)
    assert "1 new" in out.getvalue()
    assert _config(tenant_a, source_id)["root"] == str(second)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        assert Claim.objects.filter(source_id=source_id, predicate="RUNS_ON").exists()
        changed = AuditEvent.objects.filter(action="source.update", target_id=str(source_id))
        assert changed.count() == 1


def test_a_path_out_of_reach_is_refused_and_nothing_changes(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    source_id = markdown_source(tenant_a, tmp_path, tier=1)
    outside = Path(settings.BASE_DIR).parent  # not under VERA_SOURCES__FILE_ROOTS
    with pytest.raises(CommandError, match=r"--path refused: .*root"):
        call_command("ingest", str(source_id), "--path", str(outside), stdout=io.StringIO())
    assert _config(tenant_a, source_id)["root"] == str(tmp_path)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        assert not AuditEvent.objects.filter(action="source.update").exists()
        assert not Claim.objects.filter(source_id=source_id).exists()
