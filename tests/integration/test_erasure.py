"""Erasure of an episode or a source: the content leaves every store; a tombstone stays.

Real pipeline (Markdown source), real outbox into the index and FalkorDB, the real
object store and RLS. The residual scan (`manage.py erasure_verify`) looks by ids in
every table, by fingerprint in every text column, in the graph, the object store and
the caches; it is shown to find what is left (before the cleanup, a planted copy).
"""

from __future__ import annotations

import datetime as dt
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from curation import bootstrap
from curation.models import Claim, Episode, OutboxJob, Source, Tombstone
from curation.tasks import process_outbox
from retrieval import bootstrap as retrieval_bootstrap
from retrieval.domain.query import Query
from retrieval.models import SearchHit
from retrieval.services.erasure import erase
from tenants import rls
from tests.support.ingest import ingest_markdown
from tests.support.tenancy import Tenant, admin_site_login

pytestmark = pytest.mark.django_db

DOCS = {
    "billing.md": "# Billing\n\nThe billing-api runs on k8s-secret-7. "
    "The billing-api is owned by payments-team.\n",
    "team.md": "# Team\n\nThe billing-api is owned by payments-team.\n",
}


def _episode(tenant: Tenant, name: str) -> Episode:
    with rls.tenant_context(tenant.principal(tenant.admin)):
        return Episode.objects.get(external_id=name)


def _post(client: Client, user, url: str, **body: object) -> tuple[int, dict]:
    client.force_login(user)
    response = client.post(url, body, content_type="application/json")
    return response.status_code, response.json()


def _verify(tombstone_id: int) -> str:
    out = StringIO()
    call_command("erasure_verify", str(tombstone_id), stdout=out)
    return out.getvalue()


def _found(tenant: Tenant, text: str) -> list[int]:
    with rls.tenant_context(tenant.principal(tenant.viewer)):
        result = retrieval_bootstrap.search()(query=Query(text=text, k=10), now=timezone.now())
    return [hit.claim_id for hit in result.hits]


def test_an_erased_episode_leaves_nothing_but_a_tombstone(
    tenant_a: Tenant, tenant_b: Tenant, tmp_path: Path, client: Client,
    django_capture_on_commit_callbacks,
) -> None:  # fmt: skip
    ingest_markdown(tenant_a, tmp_path, DOCS)
    episode = _episode(tenant_a, "billing.md")
    url = f"/api/v1/episodes/{episode.pk}/erase"
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        secret = Claim.objects.get(predicate="RUNS_ON")
    assert secret.pk in _found(tenant_a, "k8s-secret-7")
    assert bootstrap.providers().object_store().get(episode.object_key)

    status, body = _post(client, tenant_a.admin, url, reason="erasure request")
    assert status == 400  # no confirmation: it says what would be destroyed
    assert "destroys 1 episode(s)" in body["detail"]
    assert _post(client, tenant_a.reviewer, url, reason="x", confirm=True)[0] == 403
    assert _post(client, tenant_b.admin, url, reason="x", confirm=True)[0] == 404
    assert _episode(tenant_a, "billing.md").pk == episode.pk  # nothing happened

    with django_capture_on_commit_callbacks(execute=True):
        status, body = _post(client, tenant_a.admin, url, reason="erasure request", confirm=True)
    while process_outbox():
        pass

    assert status == 200, body
    assert body["counts"]["claims_erased"] >= 1
    assert body["counts"]["claims_losing_evidence"] == 1  # "owned by" is in team.md too
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        tombstone = Tombstone.objects.get(pk=body["id"])
        assert not Episode.objects.filter(pk=episode.pk).exists()
        assert not Claim.objects.filter(pk=secret.pk).exists()
        owned = Claim.objects.get(predicate="OWNED_BY")
        assert [e.episode.external_id for e in owned.evidence.all()] == ["team.md"]
    assert tombstone.status == Tombstone.Status.COMPLETE
    assert "k8s-secret" not in str(tombstone.counts) + str(tombstone.cleanup)  # no content
    assert secret.pk not in _found(tenant_a, "k8s-secret-7")
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        from retrieval.models import SearchDocument

        assert not SearchDocument.objects.filter(text__contains="k8s-secret-7").exists()
    with pytest.raises(KeyError):
        bootstrap.providers().object_store().get(episode.object_key)
    edges = bootstrap.providers().graph().dump(tenant_a.workspace.group_id).edges
    assert secret.pk not in {edge[0] for edge in edges}
    assert "is complete: nothing of it remains" in _verify(tombstone.pk)
    client.force_login(tenant_a.viewer)
    shown = client.get(f"/api/v1/tombstones/{tombstone.pk}").json()
    assert (shown["kind"], shown["status"], shown["reason"]) == (
        "episode", "complete", "erasure request",
    )  # fmt: skip
    client.force_login(tenant_b.admin)
    assert client.get(f"/api/v1/tombstones/{tombstone.pk}").status_code == 404

    # The scan is not blind: a copy of an erased sentence planted in a log is found.
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        SearchHit.objects.create(
            group_id=tenant_a.workspace.group_id, query_id="00000000-0000-0000-0000-000000000009",
            query_text=secret.fact_text, claim_id=1, rank=1, score=0.1, signals={},
        )  # fmt: skip
    with pytest.raises(CommandError, match=r"text in retrieval_searchhit\.query_text"):
        _verify(tombstone.pk)


def test_if_the_request_dies_after_commit_the_worker_completes_the_erasure(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    ingest_markdown(tenant_a, tmp_path, DOCS)
    episode = _episode(tenant_a, "billing.md")
    admin = tenant_a.principal(tenant_a.admin)
    with rls.tenant_context(admin):  # the commit, and no cleanup after it (the process died)
        tombstone = erase(
            actor=admin, kind="episode", target_id=episode.pk, reason="gone",
            confirm=True, catalog=retrieval_bootstrap.providers().embedders(),
        )  # fmt: skip

    with pytest.raises(CommandError, match="raw artifacts") as left:
        _verify(tombstone.pk)
    assert "graph edges" in str(left.value)
    while process_outbox():  # the cleanup job is not visible yet: nothing cleans
        pass
    with rls.tenant_context(admin):
        assert Tombstone.objects.get(pk=tombstone.pk).status == Tombstone.Status.CLEANING
    with rls.tenant_context(admin):  # a minute later
        OutboxJob.objects.filter(kind="erasure.cleanup").update(
            available_at=timezone.now() - dt.timedelta(seconds=1)
        )
    while process_outbox():
        pass

    with rls.tenant_context(admin):
        assert Tombstone.objects.get(pk=tombstone.pk).status == Tombstone.Status.COMPLETE
    assert "is complete" in _verify(tombstone.pk)


def test_an_erased_source_goes_with_everything_only_it_supported(
    tenant_a: Tenant, tmp_path: Path, client: Client, django_capture_on_commit_callbacks
) -> None:
    ingest_markdown(tenant_a, tmp_path / "one", {"billing.md": DOCS["billing.md"]})
    ingest_markdown(tenant_a, tmp_path / "two", {"team.md": DOCS["team.md"]}, name="other")
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        source = Source.objects.get(name="docs")

    with django_capture_on_commit_callbacks(execute=True):
        status, body = _post(
            client, tenant_a.admin, f"/api/v1/sources/{source.pk}/erase",
            reason="wrong repository", confirm=True,
        )  # fmt: skip
    while process_outbox():
        pass

    assert status == 200, body
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        assert not Source.objects.filter(pk=source.pk).exists()
        owned = Claim.objects.get(predicate="OWNED_BY")  # supported by the other source too
        assert owned.source.name == "other"
        assert not Claim.objects.filter(predicate="RUNS_ON").exists()
    assert "is complete" in _verify(body["id"])


def test_the_admin_lists_tombstones_and_verifies_them(
    tenant_a: Tenant, tmp_path: Path, client: Client
) -> None:
    ingest_markdown(tenant_a, tmp_path, DOCS)
    admin = tenant_a.principal(tenant_a.admin)
    with rls.tenant_context(admin):
        tombstone = erase(
            actor=admin, kind="episode", target_id=_episode(tenant_a, "billing.md").pk,
            reason="gone", confirm=True, catalog=retrieval_bootstrap.providers().embedders(),
        )  # fmt: skip
    admin_site_login(client, tenant_a.admin)
    url = "/admin/curation/tombstone/"
    listing = client.get(url).content.decode()
    assert "cleaning" in listing
    assert "k8s-secret" not in listing  # no content, even in the admin

    before = client.post(
        url, {"action": "verify_selected", "_selected_action": [tombstone.pk]}, follow=True
    )
    assert "still found in" in before.content.decode()  # the cleanup has not run yet
    with rls.tenant_context(admin):
        OutboxJob.objects.filter(kind="erasure.cleanup").update(available_at=timezone.now())
    while process_outbox():
        pass
    after = client.post(
        url, {"action": "verify_selected", "_selected_action": [tombstone.pk]}, follow=True
    )
    assert "nothing of it remains" in after.content.decode()


_DIE_AFTER_COMMIT = """
import os, signal
from curation.models import Episode
from retrieval import bootstrap
from retrieval.services.erasure import erase
from tenants import rls
from tenants.selectors import principal_for_user
actor = principal_for_user({user}, label="dying-request")
with rls.tenant_context(actor):
    episode = Episode.objects.get(external_id="billing.md")
    tombstone = erase(actor=actor, kind="episode", target_id=episode.pk, reason="request",
                      confirm=True, catalog=bootstrap.providers().embedders())
print(tombstone.pk, flush=True)
os.kill(os.getpid(), signal.SIGKILL)  # committed; the cleanup never runs here
"""


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_process_killed_between_commit_and_cleanup_leaves_it_to_a_real_worker(
    tenant_a: Tenant, tmp_path: Path, app_database_url: str
) -> None:
    import os
    import subprocess
    import sys

    from curation.tasks import process_outbox as task
    from tests.support.workers import ROOT, celery_worker

    ingest_markdown(tenant_a, tmp_path / "docs", DOCS)
    env = {**os.environ, "DATABASE_URL": app_database_url}
    env.pop("DATABASE_OWNER_URL", None)
    dying = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c",
         _DIE_AFTER_COMMIT.format(user=tenant_a.admin.pk)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert dying.returncode == -9, dying.stderr[-2000:]
    tombstone_id = int(dying.stdout.split()[-1])
    with pytest.raises(CommandError, match="raw artifacts"):
        _verify(tombstone_id)  # committed in Postgres, the rest not cleaned

    admin = tenant_a.principal(tenant_a.admin)
    with rls.tenant_context(admin):  # the job becomes visible (a minute later)
        OutboxJob.objects.filter(kind="erasure.cleanup").update(available_at=timezone.now())
    with celery_worker(
        database_url=app_database_url, log_path=tmp_path / "worker.log", queue="projection",
        extra_env={"VERA_WORKER__WARM_EMBEDDER": "false"},
    ):  # fmt: skip
        task.apply_async(kwargs={"consumer": "graph"}, queue="projection").get(timeout=120)

    with rls.tenant_context(admin):
        assert Tombstone.objects.get(pk=tombstone_id).status == Tombstone.Status.COMPLETE
    assert "is complete: nothing of it remains" in _verify(tombstone_id)


def test_erasing_the_document_of_the_newer_value_makes_the_older_current_again(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    from curation.usecases import ingest_now
    from tests.support.ingest import T0, T1, write_at
    from tests.support.tenancy import markdown_source

    write_at(tmp_path, "old.md", "# Old\n\nThe billing-api runs on k8s-prod-1.\n", T0)
    source_id = markdown_source(tenant_a, tmp_path, tier=1)
    ingest_now(source_id=source_id, group_id=tenant_a.workspace.group_id)
    write_at(tmp_path, "new.md", "# New\n\nThe billing-api runs on k8s-prod-2.\n", T1)
    ingest_now(source_id=source_id, group_id=tenant_a.workspace.group_id)
    admin = tenant_a.principal(tenant_a.admin)
    with rls.tenant_context(admin):
        assert (
            Claim.objects.get(status="published", predicate="RUNS_ON").object_entity.canonical_name
            == "k8s-prod-2"
        )
        erase(
            actor=admin, kind="episode", target_id=_episode(tenant_a, "new.md").pk,
            reason="wrong", confirm=True, catalog=retrieval_bootstrap.providers().embedders(),
        )  # fmt: skip
        current = Claim.objects.select_related("object_entity").get(
            status="published", predicate="RUNS_ON"
        )
    assert current.object_entity.canonical_name == "k8s-prod-1"
    assert (current.valid_to, current.superseded_by_id) == (None, None)
