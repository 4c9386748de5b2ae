"""A workspace searched with a second (companion) model besides its own.

The deployment's default here is `hashing` (the test settings); the operator also
offers the real multilingual e5. A workspace admin adds e5 as its workspace's
companion in the admin: every document gets a second vector (new ones at once, older
ones from a real maintenance-lane worker), and the workspace's searches fuse three
lists: full text, the workspace's own model, the companion. Another workspace sees
neither the companion's vectors nor its list.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from io import StringIO
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from common.errors import PermissionDenied
from curation.domain.conversation import statement_said
from curation.models import Claim, Source
from retrieval import bootstrap
from retrieval.domain.query import Query
from retrieval.models import CompanionVector, GroupEmbedding, SearchDocument
from retrieval.ports import EmbeddingCache
from retrieval.services.embedding import SwitchRefused, embedding_companion
from retrieval.services.search import stage1_lists
from retrieval.tasks import index_catch_up_workspaces
from retrieval.usecases import index_catch_up
from tenants import rls
from tenants.models import AuditEvent
from tests.support.embedding import E5, ENGLISH, VIETNAMESE, maintenance_worker_offering_e5
from tests.support.ingest import drain_outbox, ingest_markdown, ingest_run, write_files
from tests.support.tenancy import Tenant, create_source

URL = "/admin/retrieval/groupembedding/companion/"
QUESTION = "What is the capital of Vietnam?"


@pytest.fixture
def offered(settings) -> None:
    settings.VERA_EMBEDDER__CHOICES = ["e5"]


@pytest.fixture
def maintenance_worker(app_database_url: str, tmp_path: Path) -> Iterator[subprocess.Popen]:
    with maintenance_worker_offering_e5(app_database_url, tmp_path / "worker.log") as process:
        yield process


def _companions(tenant: Tenant) -> list[tuple[str, int]]:
    with rls.tenant_context(tenant.principal(tenant.admin)):
        return sorted(CompanionVector.objects.values_list("model", "dimension"))


def _lists(tenant: Tenant, text: str) -> dict[str, list[int]]:
    with rls.tenant_context(tenant.principal(tenant.viewer)):
        lists = stage1_lists(Query(text=text, k=5), embedder=bootstrap.providers().embedders())
    return lists.rankings


def _hits(client: Client, q: str) -> list[dict]:
    response = client.get("/api/v1/search", {"q": q, "k": 10})
    assert response.status_code == 200, response.content
    return response.json()["hits"]


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_companion_added_in_the_admin_gives_every_document_a_second_vector(
    tenant_a: Tenant, tenant_b: Tenant, tmp_path: Path, client: Client, offered: None,
    maintenance_worker: subprocess.Popen,
) -> None:  # fmt: skip
    ingest_markdown(tenant_a, tmp_path / "a", VIETNAMESE)
    ingest_markdown(tenant_b, tmp_path / "b", ENGLISH)
    tenant_a.admin.is_staff = True
    tenant_a.admin.save()
    client.force_login(tenant_a.admin)
    group_id = tenant_a.workspace.group_id

    page = client.get(URL)
    assert page.status_code == 200
    assert "hashing, e5" in page.content.decode()
    same = client.post(
        URL, {"workspace": group_id, "companion": "hashing", "reason": "x", "confirm": "on"}
    )
    assert "a companion must be another model" in same.content.decode()
    done = client.post(
        URL, {"workspace": group_id, "companion": "e5", "reason": "Vietnamese", "confirm": "on"}
    )
    assert done.status_code == 302
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        assert GroupEmbedding.objects.get().companion == "e5"
        event = AuditEvent.objects.get(action="embedding.companion")
        assert (event.data["to"], event.data["to_embed"], event.data["reason"]) == (
            "e5", 2, "Vietnamese",
        )  # fmt: skip
    # Before the worker has been, the documents have no second vector: the companion's
    # list is empty.
    assert _companions(tenant_a) == []
    assert _lists(tenant_a, QUESTION)[f"companion@{E5}"] == []
    assert (
        "e5: 0 of 2 (embedding)" in client.get("/admin/retrieval/groupembedding/").content.decode()
    )

    outcome = index_catch_up_workspaces.delay().get(timeout=180)

    assert group_id in outcome
    assert _companions(tenant_a) == [(E5, 384), (E5, 384)]
    lists = _lists(tenant_a, QUESTION)
    assert set(lists) == {"fulltext", "vector", f"companion@{E5}"}
    assert lists["fulltext"] == []  # no word in common: only vectors can find it
    facts = {hit["claim_id"]: hit["fact"] for hit in _hits(client, QUESTION)}
    assert "Hà Nội là thủ đô" in facts[lists[f"companion@{E5}"][0]]  # e5 understood it
    # Another workspace: its own model only, and tenant A's second vectors out of reach.
    assert _companions(tenant_b) == []
    assert set(_lists(tenant_b, QUESTION)) == {"fulltext", "vector"}
    # New documents get both vectors at once.
    ingest_markdown(tenant_a, tmp_path / "a2", {"hue.md": "# Huế\n\nHuế là cố đô.\n"}, name="more")
    assert len(_companions(tenant_a)) == 3
    assert "e5: 3 of 3" in client.get("/admin/retrieval/groupembedding/").content.decode()

    out = StringIO()
    call_command(
        "embedding_switch", "--group", group_id, "--companion", "none", "--reason", "cost",
        stdout=out,
    )  # fmt: skip
    assert "3 companion vectors were deleted" in out.getvalue()
    assert _companions(tenant_a) == []
    assert set(_lists(tenant_a, QUESTION)) == {"fulltext", "vector"}


@pytest.mark.django_db
def test_a_companion_is_refused_with_the_reason_and_nothing_is_written(
    tenant_a: Tenant, tmp_path: Path, offered: None
) -> None:
    ingest_markdown(tenant_a, tmp_path, ENGLISH)
    catalog = bootstrap.providers().embedders()
    group_id = tenant_a.workspace.group_id
    admin, reviewer = tenant_a.principal(tenant_a.admin), tenant_a.principal(tenant_a.reviewer)
    with rls.tenant_context(admin):
        with pytest.raises(PermissionDenied, match="admin role"):
            embedding_companion(
                actor=reviewer, group_id=group_id, provider="e5", catalog=catalog, reason="x"
            )
        with pytest.raises(SwitchRefused, match="not offered here; choose one of hashing, e5"):
            embedding_companion(
                actor=admin, group_id=group_id, provider="voyage", catalog=catalog, reason="x"
            )
        with pytest.raises(SwitchRefused, match="say why"):
            embedding_companion(
                actor=admin, group_id=group_id, provider="e5", catalog=catalog, reason=""
            )
        with pytest.raises(SwitchRefused, match="another model"):
            embedding_companion(
                actor=admin, group_id=group_id, provider="hashing", catalog=catalog, reason="x"
            )
        assert GroupEmbedding.objects.get().companion == ""
        assert not AuditEvent.objects.filter(action="embedding.companion").exists()
        assert not CompanionVector.objects.exists()


@pytest.mark.django_db
def test_a_companion_no_longer_offered_leaves_the_workspace_on_its_own_model(
    tenant_a: Tenant, tmp_path: Path, settings, offered: None
) -> None:
    ingest_markdown(tenant_a, tmp_path, ENGLISH)
    call_command(
        "embedding_switch", "--group", tenant_a.workspace.group_id, "--companion", "e5",
        "--reason", "try", "--now", stdout=StringIO(),
    )  # fmt: skip
    assert len(_companions(tenant_a)) == 2
    assert set(_lists(tenant_a, "billing-api")) == {"fulltext", "vector", f"companion@{E5}"}
    settings.VERA_EMBEDDER__CHOICES = []  # the operator withdrew e5

    assert set(_lists(tenant_a, "billing-api")) == {"fulltext", "vector"}
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        result = bootstrap.search()(query=Query(text="billing-api", k=3), now=timezone.now())
        best = SearchDocument.objects.get(claim_id=result.hits[0].claim_id)
    assert "billing-api" in best.text
    assert set(result.hits[0].stage1) == {"fulltext", "vector"}


@pytest.mark.django_db
def test_the_operators_default_companion_comes_with_a_new_workspace(
    tenant_a: Tenant, tmp_path: Path, settings, offered: None
) -> None:
    settings.VERA_EMBEDDER__COMPANION = "e5"
    ingest_markdown(tenant_a, tmp_path, ENGLISH)

    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        assert GroupEmbedding.objects.get().companion == "e5"
    assert _companions(tenant_a) == [(E5, 384), (E5, 384)]  # written with the documents


CONVERSATION = {
    "title": "Ana and Bo",
    "sessions": [
        {
            "date": "8 May 2023",
            "turns": [
                {"speaker": "Ana", "text": "I took up pottery last month, it calms me down."},
                {"speaker": "Bo", "text": "Nice! I went camping by the lake with my kids."},
            ],
        }
    ],
}


def _conversation_source(tenant: Tenant, root: Path, transcript: Any = None) -> None:
    """A tier-2 conversation source over one transcript in `root`, ingested and indexed."""
    write_files(root, {"ana.json": json.dumps(transcript or CONVERSATION)})
    source_id = create_source(
        tenant.principal(tenant.admin), group_id=tenant.workspace.group_id,
        kind="conversation", name="chats", config={"root": str(root)}, tier=2,
    )  # fmt: skip
    ingest_run(source_id=source_id, group_id=tenant.workspace.group_id)
    drain_outbox()


@pytest.mark.django_db
def test_a_workspace_holding_a_conversation_source_is_also_searched_with_e5(
    tenant_a: Tenant, tenant_b: Tenant, tmp_path: Path, settings, offered: None
) -> None:
    """The deployment's conversation companion (production's default: e5) comes with a
    new workspace that holds a conversation source, written with its documents; a
    workspace of Markdown gets none, and never sees the other's vectors."""
    settings.VERA_EMBEDDER__CONVERSATION_COMPANION = "e5"
    _conversation_source(tenant_a, tmp_path / "chats")
    ingest_markdown(tenant_b, tmp_path / "docs", ENGLISH)

    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        assert GroupEmbedding.objects.get().companion == "e5"
        documents = SearchDocument.objects.count()
    assert documents == 2
    assert _companions(tenant_a) == [(E5, 384)] * documents
    assert set(_lists(tenant_a, "What calms Ana down?")) == {
        "fulltext", "vector", f"companion@{E5}",
    }  # fmt: skip
    with rls.tenant_context(tenant_b.principal(tenant_b.admin)):
        assert GroupEmbedding.objects.get().companion == ""
    assert _companions(tenant_b) == []
    assert set(_lists(tenant_b, "billing-api")) == {"fulltext", "vector"}


TWO_DAYS = {
    "title": "Ana and Bo",
    "sessions": [
        {
            "date": "8 May 2023",
            "turns": [
                {"speaker": "Bo", "text": "What do you do to unwind after work?"},
                {"speaker": "Ana", "text": "Pottery, mostly. It calms me down."},
            ],
        },
        {
            "date": "9 May 2023",
            "turns": [{"speaker": "Bo", "text": "Finished my first ceramic bowl!"}],
        },
    ],
}


def _cosine(a: Any, b: Any) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def _two_turns(before: str, turn: str) -> str:
    """What the companion reads for a turn after the one before it: the two as said."""
    said = [statement_said(text) for text in (before, turn)]
    return "\n".join(
        f"{s.speaker}: {s.words.removeprefix(s.speaker + ' said: ')}" for s in said if s
    )


@pytest.mark.django_db
def test_the_companion_reads_a_turn_after_the_turn_before_it_that_day(
    tenant_a: Tenant, tmp_path: Path, settings, offered: None
) -> None:
    """The companion's vector of an answer is e5's of the question before it and the
    answer; the first turn of a day is read alone, and the text shown and the
    workspace's own vector stay the turn's."""
    settings.VERA_EMBEDDER__CONVERSATION_COMPANION = "e5"
    root = tmp_path / "chats"
    write_files(root, {"ana.json": json.dumps(TWO_DAYS)})
    source_id = create_source(
        tenant_a.principal(tenant_a.admin), group_id=tenant_a.workspace.group_id,
        kind="conversation", name="chats", config={"root": str(root)}, tier=2,
    )  # fmt: skip
    ingest_run(source_id=source_id, group_id=tenant_a.workspace.group_id)
    drain_outbox()

    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        docs = {d.text.split(" said: ")[1][:12]: d for d in SearchDocument.objects.all()}
        vectors = dict(CompanionVector.objects.values_list("document_id", "embedding"))
        facts = dict(Claim.objects.values_list("id", "fact_text"))
    question, answer, bowl = docs["What do you "], docs["Pottery, mos"], docs["Finished my "]
    e5 = bootstrap.providers().embedders().passage("e5")
    told_text = _two_turns(facts[question.claim_id], facts[answer.claim_id])
    assert told_text.startswith("Bo: What do you do")
    assert "On " not in told_text
    alone, told = e5.embed([answer.text, told_text])
    assert _cosine(vectors[answer.pk], told) > 0.999
    assert _cosine(vectors[answer.pk], alone) < 0.99  # the context changed it
    # The first turn of each day has no context that day: the 9 May turn is read alone,
    # not after 8 May's last.
    first, next_day = e5.embed([question.text, bowl.text])
    assert _cosine(vectors[question.pk], first) > 0.999
    assert _cosine(vectors[bowl.pk], next_day) > 0.999
    assert "What do you do" not in answer.text  # shown and searched as said


@pytest.mark.django_db
def test_erasing_a_conversation_forgets_the_companions_readings_of_its_turns(
    tenant_a: Tenant, tmp_path: Path, settings, offered: None, client: Client,
    django_capture_on_commit_callbacks,
) -> None:  # fmt: skip
    """The companion's cached vector of "the turn before, then the turn" is content of
    the erased conversation too: the erasure forgets it, and its scan says so."""
    settings.VERA_EMBEDDER__CONVERSATION_COMPANION = "e5"
    _conversation_source(tenant_a, tmp_path / "chats", TWO_DAYS)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        source = Source.objects.get(name="chats")
        answer = SearchDocument.objects.get(text__contains="Pottery, mostly")
        question = Claim.objects.get(fact_text__contains="What do you do to unwind")
        answered = Claim.objects.get(pk=answer.claim_id).fact_text
    cache = bootstrap.providers().embedders().passage("e5")
    assert isinstance(cache, EmbeddingCache)
    key = cache.key(_two_turns(question.fact_text, answered))
    assert cache.holds([key]) == [key]  # what the index embedded, cached

    with django_capture_on_commit_callbacks(execute=True):
        client.force_login(tenant_a.admin)
        response = client.post(
            f"/api/v1/sources/{source.pk}/erase", {"reason": "asked to", "confirm": True},
            content_type="application/json",
        )  # fmt: skip
    drain_outbox()

    assert response.status_code == 200, response.content
    assert cache.holds([key]) == []
    out = StringIO()
    call_command("erasure_verify", str(response.json()["id"]), stdout=out)
    assert "is complete" in out.getvalue()


@pytest.mark.django_db
def test_a_workspace_that_comes_to_hold_conversations_gets_the_companion_then(
    tenant_a: Tenant, tmp_path: Path, settings, offered: None
) -> None:
    """Markdown first (one model), then a conversation source: from its first turn on the
    workspace is searched with e5 too, the index says so in the audit log, and the older
    documents get their second vector from the catch-up."""
    settings.VERA_EMBEDDER__CONVERSATION_COMPANION = "e5"
    ingest_markdown(tenant_a, tmp_path / "docs", ENGLISH)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        assert GroupEmbedding.objects.get().companion == ""
        older = SearchDocument.objects.count()
    assert older > 0
    assert _companions(tenant_a) == []

    _conversation_source(tenant_a, tmp_path / "chats")

    group_id = tenant_a.workspace.group_id
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        assert GroupEmbedding.objects.get().companion == "e5"
        event = AuditEvent.objects.get(action="embedding.companion")
        assert (event.actor_label, event.data["to"], event.data["to_embed"]) == (
            "system:index", "e5", older,
        )  # fmt: skip
        assert "conversation source" in event.data["reason"]
    assert _companions(tenant_a) == [(E5, 384)] * 2  # the two turns, at once
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        assert index_catch_up(group_id=group_id) == older  # the Markdown's claims
    assert _companions(tenant_a) == [(E5, 384)] * (2 + older)


@pytest.mark.django_db
def test_an_admin_who_removed_the_companion_keeps_it_removed(
    tenant_a: Tenant, tmp_path: Path, settings, offered: None, client: Client
) -> None:
    settings.VERA_EMBEDDER__CONVERSATION_COMPANION = "e5"
    ingest_markdown(tenant_a, tmp_path / "docs", ENGLISH)
    admin = tenant_a.principal(tenant_a.admin)
    with rls.tenant_context(admin):
        embedding_companion(
            actor=admin, group_id=tenant_a.workspace.group_id, provider=None,
            catalog=bootstrap.providers().embedders(), reason="one model is enough here",
        )  # fmt: skip

    _conversation_source(tenant_a, tmp_path / "chats")

    with rls.tenant_context(admin):
        assert GroupEmbedding.objects.get().companion == ""
        assert not AuditEvent.objects.filter(actor_label="system:index").exists()
    assert _companions(tenant_a) == []
    tenant_a.admin.is_staff = True
    tenant_a.admin.save()
    client.force_login(tenant_a.admin)
    page = client.get("/admin/retrieval/groupembedding/")
    assert page.status_code == 200
    assert "none (an admin&#x27;s choice)" in page.content.decode()


def test_a_conversation_companion_that_is_not_offered_is_a_configuration_error(
    settings,
) -> None:
    from django.core.exceptions import ImproperlyConfigured

    from vera import wiring

    settings.VERA_EMBEDDER__CONVERSATION_COMPANION = "e5"
    settings.VERA_EMBEDDER__CHOICES = []
    with pytest.raises(ImproperlyConfigured, match=r"CONVERSATION_COMPANION.*not offered"):
        wiring.embedder_catalog()


def test_a_process_does_not_start_with_a_companion_that_is_not_offered() -> None:
    """Every process checks the embedders' settings as it starts (loading no model): an
    operator who withdraws e5 but leaves it the conversations' companion is told so."""
    env = {
        **os.environ,
        "VERA_EMBEDDER__CHOICES": "",
        "VERA_EMBEDDER__CONVERSATION_COMPANION": "e5",
    }
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "manage.py", "check"], env=env, cwd=root, capture_output=True,
        text=True, check=False,
    )  # fmt: skip
    assert out.returncode != 0
    assert "VERA_EMBEDDER__CONVERSATION_COMPANION is 'e5', which is not offered" in out.stderr


def test_production_offers_e5_and_gives_it_to_conversations() -> None:
    """What production's settings say when the environment sets none of the embedders'
    (the test settings narrow both): read by a Python of its own, as a server starts."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("VERA_EMBEDDER__")}
    clean.pop("DJANGO_SETTINGS_MODULE", None)
    read = (
        "import json; from vera.settings import base as b; print(json.dumps([b.VERA_EMBEDDER__"
        "CHOICES, b.VERA_EMBEDDER__CONVERSATION_COMPANION, b.VERA_EMBEDDER__COMPANION]))"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", read], env=clean, cwd=root, capture_output=True, text=True,
        check=True,
    )  # fmt: skip
    assert json.loads(out.stdout) == [["e5"], "e5", ""]


def test_a_default_companion_that_is_not_offered_is_a_configuration_error(settings) -> None:
    from django.core.exceptions import ImproperlyConfigured

    from vera import wiring

    settings.VERA_EMBEDDER__COMPANION = "e5"
    settings.VERA_EMBEDDER__CHOICES = []
    with pytest.raises(ImproperlyConfigured, match="not offered"):
        wiring.embedder_catalog()
