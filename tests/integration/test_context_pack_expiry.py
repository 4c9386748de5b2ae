"""Served context packs expire: the nightly job deletes, in every workspace and only
there, the packs kept longer than VERA_CONTEXT__PACK_RETENTION_DAYS.

Real Postgres as the application role: the job finds the workspaces through its system
finder (no tenant context lists them all) and deletes each one's packs in a context of
that workspace alone.
"""

from __future__ import annotations

import datetime as dt
import importlib
import uuid

import pytest
from django.apps import apps
from django.conf import settings
from django.test import override_settings
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from retrieval.models import ContextPack
from retrieval.tasks import expire_context_packs
from tenants import rls
from tenants.selectors import principal_system
from tests.support.tenancy import Tenant
from vera.celery import app

pytestmark = pytest.mark.django_db

DAYS = settings.VERA_CONTEXT__PACK_RETENTION_DAYS


def _pack(tenant: Tenant, *, age_days: float) -> int:
    """A kept pack of the tenant's workspace served `age_days` ago; its id."""
    group_id = tenant.workspace.group_id
    with rls.tenant_context(principal_system("test", group_ids=[group_id])):
        pack = ContextPack.objects.create(
            group_id=group_id, pack_id=uuid.uuid4(), query_text="where does billing-api run?",
            as_of=timezone.now(), assembler_version=1, tokenizer="t", token_budget=50,
            tokens=10, claim_ids=[], episode_ids=[], text="The billing-api runs on k8s-prod-1.",
        )  # fmt: skip
        served = timezone.now() - dt.timedelta(days=age_days)
        ContextPack.objects.filter(pk=pack.pk).update(created_at=served)
    return pack.pk


def _kept(tenant: Tenant) -> set[int]:
    group_id = tenant.workspace.group_id
    with rls.tenant_context(principal_system("test", group_ids=[group_id])):
        return set(ContextPack.objects.values_list("pk", flat=True))


def test_the_job_deletes_the_packs_past_retention_in_every_workspace_and_nothing_else(
    tenant_a: Tenant, tenant_b: Tenant
) -> None:
    _pack(tenant_a, age_days=DAYS + 1)
    _pack(tenant_b, age_days=DAYS + 30)
    recent_a, recent_b = _pack(tenant_a, age_days=DAYS - 1), _pack(tenant_b, age_days=0)

    outcomes = expire_context_packs()

    assert _kept(tenant_a) == {recent_a}
    assert _kept(tenant_b) == {recent_b}
    assert set(outcomes) == {tenant_a.workspace.group_id, tenant_b.workspace.group_id}
    assert all(outcome.startswith("deleted 1 served before") for outcome in outcomes.values())
    assert expire_context_packs() == {}  # nothing left to do


@override_settings(VERA_CONTEXT__PACK_RETENTION_DAYS=0)
def test_a_retention_of_zero_keeps_every_pack(tenant_a: Tenant) -> None:
    old = _pack(tenant_a, age_days=3650)
    assert expire_context_packs() == {}
    assert _kept(tenant_a) == {old}


def test_the_job_is_scheduled_nightly_on_the_maintenance_lane() -> None:
    migration = importlib.import_module("retrieval.migrations.0020_context_pack_expiry")
    name = migration.JOB[0]
    PeriodicTask.objects.filter(name=name).delete()  # a transactional test may have emptied it
    migration.create(apps, None)
    migration.create(apps, None)  # created once: an operator's changes are never overwritten

    row = PeriodicTask.objects.get(name=name)
    assert row.task == "retrieval.expire_context_packs"
    assert row.task in app.tasks
    assert (row.crontab.minute, row.crontab.hour, str(row.crontab.timezone)) == ("15", "4", "UTC")
    assert row.queue == "maintenance"
    assert settings.CELERY_TASK_ROUTES[row.task] == {"queue": "maintenance"}
