"""Context packs end to end: `GET /api/v1/context` over the real ingest pipeline, outbox,
index and search, Postgres under forced RLS as the app role; kept packs, erasure,
snapshots and the documented shape."""

from __future__ import annotations

import datetime as dt
from io import StringIO
from pathlib import Path

import pytest
import yaml
from django.core.management import CommandError, call_command
from django.test import Client

from curation.models import Claim, Episode
from curation.tasks import process_outbox
from retrieval import bootstrap
from retrieval.adapters.tokenizer import WordPieceTokenizer
from retrieval.api.serializers import ContextPackSerializer, PackFactSerializer
from retrieval.domain.query import Query
from retrieval.models import ContextPack, Snapshot
from retrieval.services import context
from retrieval.services.context import context_pack
from retrieval.services.snapshots import (
    Pinning,
    snapshot_copy,
    snapshot_take,
    snapshot_verify,
)
from tenants import rls
from tests.support.ingest import T1, ingest_billing_history, ingest_markdown
from tests.support.snapshots import sealed_snapshot
from tests.support.tenancy import Tenant

pytestmark = pytest.mark.django_db

QUESTION = "which cluster does the billing-api run on"
WORDPIECE = WordPieceTokenizer()


def _context(client: Client, user, **params: object):
    client.force_login(user)
    return client.get("/api/v1/context", {"q": QUESTION, **params})


def _pack(client: Client, user, **params: object) -> dict:
    response = _context(client, user, **params)
    assert response.status_code == 200, response.content
    return response.json()


def _key(fact: dict) -> tuple:
    return (fact["subject"].casefold(), fact["predicate"], fact["object"].casefold(),
            fact["valid_from"], fact["valid_to"])  # fmt: skip


@pytest.fixture
def history(tenant_a: Tenant, tmp_path: Path) -> Tenant:
    """billing-api ran on k8s-prod-1 from T0, runs on k8s-prod-2 since T1 (superseded)."""
    ingest_billing_history(
        tenant_a, tmp_path / "a", extra={"more.md": "# Team\n\nThe billing-api is owned by "
                                         "payments-team. The ledger-db runs on k8s-prod-1.\n"},
    )  # fmt: skip
    return tenant_a


@pytest.mark.parametrize("budget", [50, 120, 1000])
def test_the_budget_holds_counted_with_the_wordpiece_tokenizer_when_served(
    history: Tenant, client: Client, budget: int
) -> None:
    body = _pack(client, history.viewer, budget=budget)
    assert body["tokenizer"] == "minilm-wordpiece"
    assert body["token_budget"] == budget
    assert body["tokens"] == WORDPIECE.count(body["text"])
    assert body["tokens"] <= budget
    if budget == 1000:
        assert body["current"]  # a roomy budget packs what the search found


def test_a_superseded_value_is_never_presented_as_current_when_a_newer_one_is_published(
    history: Tenant, client: Client
) -> None:
    body = _pack(client, history.viewer, budget=2000)
    runs_on = [f for f in body["current"] if f["subject"] == "billing-api"]
    assert [f["object"] for f in runs_on if f["predicate"] == "RUNS_ON"] == ["k8s-prod-2"]
    assert all(f["status"] == "published" for f in body["current"])
    old = [f for f in body["history"] if f["object"] == "k8s-prod-1" and "billing" in f["fact"]]
    assert all(f["status"] == "superseded" for f in old)
    current_text = body["text"].split("History (not current):")[0]
    assert "The billing-api runs on k8s-prod-1" not in current_text


def test_no_fact_is_packed_twice_when_two_documents_state_it(
    history: Tenant, client: Client
) -> None:
    body = _pack(client, history.viewer, q="who owns the billing-api", budget=2000)
    facts = body["current"] + body["history"]
    keys = [_key(f) for f in facts]
    assert len(keys) == len(set(keys))
    owned = [f for f in facts if f["predicate"] == "OWNED_BY"]
    assert len(owned) == 1
    episodes = [c["episode"] for c in owned[0]["citations"]]
    assert sorted(episodes) == ["more.md", "team.md"]  # both documents, each once


def test_the_same_inputs_give_the_same_pack_when_asked_twice(history: Tenant) -> None:
    now = T1 + dt.timedelta(days=10)
    principal = history.principal(history.viewer)
    with rls.tenant_context(principal):
        packs = [
            context_pack(
                query=Query(text=QUESTION), token_budget=300, user_id=history.viewer.pk, now=now,
                packing=bootstrap.packing(), keep=False,
            ).pack
            for _ in range(2)
        ]  # fmt: skip
    assert packs[0] == packs[1]
    assert packs[0].facts


def test_a_served_pack_is_kept_under_the_callers_workspace_with_what_it_cites(
    history: Tenant, client: Client
) -> None:
    body = _pack(client, history.viewer, budget=1000)
    with rls.tenant_context(history.principal(history.admin)):
        rows = list(ContextPack.objects.filter(pack_id=body["pack_id"]))
        cited = set(Claim.objects.values_list("pk", flat=True))
        episodes = set(Episode.objects.values_list("pk", flat=True))
    assert [row.group_id for row in rows] == [history.workspace.group_id]
    row = rows[0]
    packed = {cid for fact in body["current"] + body["history"] for cid in fact["claim_ids"]}
    assert set(row.claim_ids) == packed
    assert set(row.claim_ids) <= cited
    assert set(row.episode_ids) <= episodes
    assert row.episode_ids
    assert row.text == body["text"]  # one workspace: its part is the whole pack
    assert (row.tokens, row.token_budget, row.assembler_version, row.query_text) == (
        body["tokens"], 1000, body["assembler_version"], QUESTION,
    )  # fmt: skip
    assert row.user_id == history.viewer.pk


def test_another_tenants_key_never_sees_its_facts_nor_its_kept_packs(
    history: Tenant, tenant_b: Tenant, tmp_path: Path, client: Client
) -> None:
    ingest_markdown(tenant_b, tmp_path / "b", {"b.md": "# B\n\nThe billing-api runs on b-1.\n"})
    kept = _pack(client, history.viewer, budget=1000)["pack_id"]
    issued = tenant_b.issue_key(owner=tenant_b.viewer)
    client.logout()
    response = client.get(
        "/api/v1/context", {"q": QUESTION, "budget": 2000},
        HTTP_AUTHORIZATION=f"Bearer {issued.plaintext}",
    )  # fmt: skip
    assert response.status_code == 200, response.content
    body = response.json()
    objects = {f["object"] for f in body["current"] + body["history"]}
    assert "b-1" in objects
    assert not objects & {"k8s-prod-1", "k8s-prod-2", "payments-team"}
    assert "k8s-prod" not in body["text"]
    with rls.tenant_context(tenant_b.principal(tenant_b.admin)):
        assert not ContextPack.objects.filter(pack_id=kept).exists()
        assert set(ContextPack.objects.values_list("group_id", flat=True)) == {
            tenant_b.workspace.group_id
        }
    with rls.tenant_context(history.principal(history.admin)):
        assert ContextPack.objects.filter(pack_id=kept).exists()  # it is there, for A


def _verify(tombstone_id: int) -> str:
    out = StringIO()
    call_command("erasure_verify", str(tombstone_id), stdout=out)
    return out.getvalue()


def test_erasing_a_cited_document_deletes_the_packs_citing_it_and_the_scan_checks_packs(
    tenant_a: Tenant, tmp_path: Path, client: Client, django_capture_on_commit_callbacks
) -> None:
    ingest_markdown(tenant_a, tmp_path, {
        "billing.md": "# Billing\n\nThe billing-api runs on k8s-secret-7.\n",
        "ledger.md": "# Ledger\n\nThe ledger-db runs on k8s-prod-1.\n",
    })  # fmt: skip
    admin = tenant_a.principal(tenant_a.admin)
    secret_pack = _pack(client, tenant_a.viewer, q="k8s-secret-7", budget=1000)
    assert "k8s-secret-7" in secret_pack["text"]
    with rls.tenant_context(admin):
        episode = Episode.objects.get(external_id="billing.md")
        secret = Claim.objects.filter(fact_text__contains="k8s-secret-7").first()
        assert secret is not None
        assert ContextPack.objects.filter(pack_id=secret_pack["pack_id"]).exists()
    client.force_login(tenant_a.admin)
    with django_capture_on_commit_callbacks(execute=True):
        erased = client.post(
            f"/api/v1/episodes/{episode.pk}/erase", {"reason": "GDPR", "confirm": True},
            content_type="application/json",
        )  # fmt: skip
    while process_outbox():
        pass
    assert erased.status_code == 200, erased.content
    tombstone = erased.json()
    assert tombstone["counts"]["context_packs"] >= 1
    with rls.tenant_context(admin):
        assert not ContextPack.objects.filter(pack_id=secret_pack["pack_id"]).exists()
        assert not ContextPack.objects.filter(text__contains="k8s-secret-7").exists()
    assert "is complete: nothing of it remains" in _verify(tombstone["id"])
    assert "ledger-db" in _pack(client, tenant_a.viewer, q="ledger-db", budget=1000)["text"]

    # The scan is not blind: a pack still citing the erased claim is found.
    with rls.tenant_context(admin):
        ContextPack.objects.create(
            group_id=tenant_a.workspace.group_id, pack_id="00000000-0000-0000-0000-00000000000a",
            query_text="q", as_of=T1, assembler_version=1, tokenizer="t", token_budget=50,
            tokens=10, claim_ids=[secret.pk], episode_ids=[], text="The billing-api runs on …",
        )  # fmt: skip
    with pytest.raises(CommandError, match="context packs"):
        _verify(tombstone["id"])


@pytest.mark.django_db(transaction=True)
def test_a_snapshot_gives_the_same_pack_again_and_refuses_another_assembler(
    history: Tenant, tmp_path: Path, client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    snapshot = sealed_snapshot(history, name="packs")
    assert snapshot.assembler_version == context.ASSEMBLER_VERSION
    assert snapshot.pins["assembler_version"] == context.ASSEMBLER_VERSION
    first = _pack(client, history.viewer, snapshot=snapshot.pk, budget=400)
    # The live index moves on; the snapshot's pack does not.
    ingest_markdown(
        history, tmp_path / "new", {"n.md": "# N\n\nThe billing-api runs on k8s-9.\n"}, name="new"
    )
    again = _pack(client, history.viewer, snapshot=snapshot.pk, budget=400)
    same = ("current", "history", "text", "tokens", "as_of", "assembler_version", "snapshot")
    assert {k: first[k] for k in same} == {k: again[k] for k in same}
    assert first["current"]
    assert first["pack_id"] != again["pack_id"]  # each serving is kept on its own
    assert "k8s-9" in _pack(client, history.viewer, budget=2000)["text"]  # live moved

    monkeypatch.setattr(context, "ASSEMBLER_VERSION", context.ASSEMBLER_VERSION + 1)
    refused = _context(client, history.viewer, snapshot=snapshot.pk)
    assert refused.status_code == 409
    assert "assembler" in refused.json()["detail"]


def test_the_seal_covers_the_pinned_assembler_version(history: Tenant) -> None:
    actor = history.principal(history.admin)
    pinning = Pinning(catalog=bootstrap.providers().embedders(), reranking=None, fusion={})
    with rls.tenant_context(actor):
        taken = snapshot_take(actor=actor, group_id=history.workspace.group_id, name="seal")
        snapshot = snapshot_copy(taken.pk, pinning)
        assert snapshot is not None
        assert snapshot_verify(snapshot)
        Snapshot.objects.filter(pk=snapshot.pk).update(assembler_version=99)
        snapshot.refresh_from_db()
        assert not snapshot_verify(snapshot)


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"budget": 49}, "budget"),
        ({"budget": 8001}, "budget"),
        ({"budget": "many"}, "budget"),
        ({"q": ""}, "q"),
        ({"as_of": "2026-01-01T00:00:00"}, "as_of"),
        ({"k": 5}, "detail"),
        ({"snapshot": 0}, "snapshot"),
    ],
)
def test_bad_input_is_a_400_naming_the_parameter(
    tenant_a: Tenant, client: Client, params: dict, field: str
) -> None:
    response = _context(client, tenant_a.viewer, **params)
    assert response.status_code == 400
    assert field in response.json()


def test_a_snapshot_the_caller_cannot_see_is_a_404(tenant_a: Tenant, client: Client) -> None:
    assert _context(client, tenant_a.viewer, snapshot=10**9).status_code == 404


def test_the_schema_documents_the_parameters_and_a_real_response_keeps_to_it(
    history: Tenant, client: Client
) -> None:
    client.force_login(history.admin)
    schema = yaml.safe_load(client.get("/api/v1/schema").content)
    operation = schema["paths"]["/api/v1/context"]["get"]
    assert {p["name"] for p in operation["parameters"]} == {
        "q", "budget", "as_of", "scope", "snapshot",
    }  # fmt: skip
    budget = next(p for p in operation["parameters"] if p["name"] == "budget")["schema"]
    assert (budget["minimum"], budget["maximum"]) == (50, 8000)
    body = _pack(client, history.viewer)
    assert set(body) == set(ContextPackSerializer().fields)
    for fact in body["current"] + body["history"]:
        assert set(fact) == set(PackFactSerializer().fields)


SESSION = (
    "# Session 3, 8 May 2023\n\n"
    "Caroline: I went to the LGBTQ support group yesterday and it was so powerful. The "
    "stories people told made me feel accepted, and I want to keep going every week.\n\n"
    "Melanie: That sounds wonderful. I painted a sunrise over the lake last weekend, the "
    "first painting I finished this year.\n"
)


def test_a_pack_over_prose_writes_each_passage_once_and_a_small_budget_still_holds_one(
    tenant_a: Tenant, tmp_path: Path, client: Client
) -> None:
    ingest_markdown(tenant_a, tmp_path / "chat", {"session-3.md": SESSION}, tier=2)
    process_outbox()
    roomy = _pack(client, tenant_a.viewer, q="what did Caroline go to", budget=1000)
    assert roomy["current"], roomy["text"]
    for line in roomy["text"].splitlines():
        assert roomy["text"].count(line) == 1 or not line.strip(), line
    assert roomy["text"].count("support group") == 1, roomy["text"]
    tight = _pack(client, tenant_a.viewer, q="what did Caroline go to", budget=300)
    assert tight["current"], tight["text"]
    assert tight["current"][0]["citations"]
    assert tight["tokens"] <= 300
