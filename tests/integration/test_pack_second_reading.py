"""A context pack's second reading, end to end: the question searched again with its
vector moved towards the first reading's best facts (`Query.like`), over a conversation
ingested by the real connector, the live index and a sealed snapshot; Postgres under
forced RLS as the app role."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.test import Client
from django.utils import timezone

from retrieval import bootstrap
from retrieval.domain.context import LIKE_HITS
from retrieval.domain.expansion import toward
from retrieval.domain.query import Query
from retrieval.models import SearchDocument
from retrieval.services import context, snapshots
from retrieval.services.context import context_pack
from retrieval.services.search import pipeline, sql
from retrieval.services.search.snapshot_sql import SnapshotIndex
from tenants import rls
from tests.support.ingest import drain_outbox, ingest_cmdb, ingest_run, write_files
from tests.support.snapshots import sealed_snapshot
from tests.support.tenancy import Tenant, create_source

pytestmark = pytest.mark.django_db

QUESTION = "What books has John read?"
READING = {
    "title": "John and Tim",
    "sessions": [
        {
            "date": "2:00 pm on 3 March, 2023",
            "turns": [
                {"speaker": "John", "text": "I'm reading Dune by Frank Herbert, a great story."},
                {"speaker": "Tim", "text": "Nice! I love fantasy books and movies."},
                {"speaker": "John", "text": "I also love non-fiction books about mindset."},
            ],
        },
        {
            "date": "6:30 pm on 9 April, 2023",
            "turns": [
                {"speaker": "John", "text": "I finished rereading The Alchemist last week."},
                {"speaker": "Tim", "text": "We played a tough basketball game on Friday."},
                {"speaker": "John", "text": "My team won the game at the buzzer!"},
            ],
        },
    ],
}


def _ingest(tenant: Tenant, root: Path) -> None:
    write_files(root, {"reading.json": json.dumps(READING)})
    source_id = create_source(
        tenant.principal(tenant.admin), group_id=tenant.workspace.group_id, kind="conversation",
        name="chats", config={"root": str(root)}, tier=2,
    )  # fmt: skip
    ingest_run(source_id=source_id, group_id=tenant.workspace.group_id)
    drain_outbox()


def _vectors(tenant: Tenant) -> dict[int, tuple[np.ndarray, str, int]]:
    """Each indexed turn's vector, model and dimension, by claim id."""
    with rls.tenant_context(tenant.principal(tenant.viewer)):
        rows = SearchDocument.objects.filter(predicate="STATES").order_by("claim_id")
        return {
            row.claim_id: (np.asarray(row.embedding, dtype=float), row.embedding_model,
                           row.dimension)
            for row in rows
        }  # fmt: skip


def test_a_search_more_like_claims_ranks_by_the_question_moved_towards_their_centroid(
    tenant_a: Tenant, tenant_b: Tenant, tmp_path: Path
) -> None:
    _ingest(tenant_a, tmp_path)
    vectors = _vectors(tenant_a)
    assert len(vectors) == 6
    like = tuple(list(vectors)[:3])
    _, model, dim = vectors[like[0]]
    mean = np.mean([vectors[claim][0] for claim in like], axis=0)
    embedders = bootstrap.providers().embedders()
    with rls.tenant_context(tenant_a.principal(tenant_a.viewer)):
        centroid = sql.centroid(like, model=model, dim=dim)
        assert centroid is not None
        assert np.allclose(centroid, mean, atol=1e-6)
        assert sql.centroid(like, model="another-model", dim=dim) is None
        query = Query(text=QUESTION, k=10, like=like)
        lists = pipeline.stage1_lists(query, embedder=embedders)
    # The vector list alone: no full-text nor understood list for a second reading.
    assert set(lists.rankings) == {"vector"}
    asked = embedders.query(embedders.default).embed([QUESTION])[0]
    moved = np.asarray(toward(asked, list(centroid)))
    nearest = sorted(
        vectors, key=lambda c: -float(moved @ vectors[c][0]) / np.linalg.norm(vectors[c][0])
    )
    assert lists.rankings["vector"] == nearest
    # Another tenant's claims have no centroid for this one: row-level security.
    with rls.tenant_context(tenant_b.principal(tenant_b.viewer)):
        assert sql.centroid(like, model=model, dim=dim) is None
        assert pipeline.stage1_lists(query, embedder=embedders).rankings == {}


def test_a_pack_reads_the_question_again_more_like_its_best_facts(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    _ingest(tenant_a, tmp_path)
    packing = bootstrap.packing()
    calls: list[tuple[Query, list[int]]] = []

    def recording(*, query: Query, **kwargs: Any) -> Any:
        result = packing.search(query=query, **kwargs)
        calls.append((query, [hit.claim_id for hit in result.hits]))
        return result

    with rls.tenant_context(tenant_a.principal(tenant_a.viewer)):
        pack = context_pack(
            query=Query(text=QUESTION), token_budget=1000, user_id=tenant_a.viewer.pk,
            now=timezone.now(), packing=replace(packing, search=recording), keep=False,
        ).pack  # fmt: skip
    texts = [query.text for query, _ in calls]
    # As asked, without the speaker it names, then more like the best facts.
    assert texts == [QUESTION, "What books has read?", "What books has read?"]
    assert [bool(query.like) for query, _ in calls] == [False, False, True]
    second = calls[2][0].like
    assert 0 < len(second) <= LIKE_HITS
    assert set(second) <= set(calls[0][1]) | set(calls[1][1])  # the first reading's facts
    assert calls[2][1], "the second reading found the turns"
    first = pack.current[0].fact
    assert "John said:" in first
    assert any(book in pack.text for book in ("Dune", "The Alchemist"))


def test_a_pack_found_nothing_reads_nothing_more(tenant_a: Tenant) -> None:
    packing = bootstrap.packing()
    calls: list[Query] = []

    def recording(*, query: Query, **kwargs: Any) -> Any:
        calls.append(query)
        return packing.search(query=query, **kwargs)

    with rls.tenant_context(tenant_a.principal(tenant_a.viewer)):
        pack = context_pack(
            query=Query(text=QUESTION), token_budget=300, user_id=None, now=timezone.now(),
            packing=replace(packing, search=recording), keep=False,
        ).pack  # fmt: skip
    assert not pack.facts
    assert [query.like for query in calls] == [()]


@pytest.mark.django_db(transaction=True)
def test_a_snapshot_reads_the_centroid_of_its_own_vectors(tenant_a: Tenant, tmp_path: Path) -> None:
    _ingest(tenant_a, tmp_path)
    vectors = _vectors(tenant_a)
    like = tuple(list(vectors)[1:4])
    _, model, dim = vectors[like[0]]
    snapshot = sealed_snapshot(tenant_a, name="second reading")
    index = SnapshotIndex(snapshot_id=snapshot.pk, size=len(vectors), avg_len=1.0)
    with rls.tenant_context(tenant_a.principal(tenant_a.viewer)):
        live = sql.centroid(like, model=model, dim=dim)
        sealed = index.centroid(like, model=model, dim=dim)
        assert live is not None
        assert sealed is not None
        assert np.allclose(sealed, live, atol=1e-6)
        assert index.centroid((10**12,), model=model, dim=dim) is None


def test_like_is_not_a_parameter_a_caller_can_pass(tenant_a: Tenant, client: Client) -> None:
    client.force_login(tenant_a.viewer)
    for path in ("/api/v1/search", "/api/v1/context"):
        response = client.get(path, {"q": QUESTION, "like": "1,2"})
        assert response.status_code == 400, path
        assert "like" in response.content.decode()


def test_a_moved_question_keeps_the_valid_time_filter(tenant_a: Tenant, tmp_path: Path) -> None:
    _ingest(tenant_a, tmp_path)
    like = tuple(list(_vectors(tenant_a))[:2])
    embedders = bootstrap.providers().embedders()
    before = dt.datetime(2023, 3, 31, tzinfo=dt.UTC)  # the first session's turns only
    with rls.tenant_context(tenant_a.principal(tenant_a.viewer)):
        valid = set(
            SearchDocument.objects.filter(predicate="STATES", valid_from__lte=before)
            .values_list("claim_id", flat=True)
        )  # fmt: skip
        lists = pipeline.stage1_lists(
            Query(text=QUESTION, like=like, as_of=before), embedder=embedders
        )
    assert 0 < len(valid) < 6  # the turns said by then, not the later ones
    assert set(lists.rankings["vector"]) == valid


@pytest.mark.django_db(transaction=True)
def test_a_snapshot_sealed_with_assembler_5_still_packs_as_5_without_the_second_reading(
    tenant_a: Tenant, tmp_path: Path, client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    _ingest(tenant_a, tmp_path)
    with monkeypatch.context() as sealing:
        sealing.setattr(snapshots, "ASSEMBLER_VERSION", 5)
        old = sealed_snapshot(tenant_a, name="sealed with v5")
    new = sealed_snapshot(tenant_a, name="sealed with v6")
    assert (old.assembler_version, new.assembler_version) == (5, 6)
    asked: list[Query] = []

    def recording(**kwargs: Any) -> Any:
        asked.append(kwargs["query"])
        return snapshots.snapshot_search(**kwargs)

    monkeypatch.setattr(context, "snapshot_search", recording)
    packs = {}
    for snapshot in (old, new):
        asked.clear()
        with rls.tenant_context(tenant_a.principal(tenant_a.viewer)):
            packs[snapshot.assembler_version] = context.context_pack(
                query=Query(text=QUESTION), token_budget=1000, user_id=None,
                now=timezone.now(), snapshot_id=snapshot.pk, packing=bootstrap.packing(),
                keep=False,
            ).pack  # fmt: skip
        readings = [bool(query.like) for query in asked]
        assert readings == ([False, False] if snapshot is old else [False, False, True])
    assert packs[5].version == 5
    assert "(VERA context pack v5)" in packs[5].text.splitlines()[0]
    assert packs[6].version == 6
    assert "(VERA context pack v6)" in packs[6].text.splitlines()[0]
    assert packs[5].facts
    client.force_login(tenant_a.viewer)
    served = client.get("/api/v1/context", {"q": QUESTION, "snapshot": old.pk})
    assert served.status_code == 200, served.content
    assert served.json()["assembler_version"] == 5


def test_a_pack_reads_again_only_when_it_holds_statements_to_reorder(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    ingest_cmdb(
        tenant_a, tmp_path / "cmdb.csv",
        "id,name,runtime_host,owner\nCI001,billing-api,k8s-prod-1,payments-team\n",
        mapping={"runtime_host": "RUNS_ON"},
    )  # fmt: skip
    drain_outbox()
    packing = bootstrap.packing()
    calls: list[Query] = []

    def recording(*, query: Query, **kwargs: Any) -> Any:
        calls.append(query)
        return packing.search(query=query, **kwargs)

    def asked(question: str) -> Any:
        calls.clear()
        with rls.tenant_context(tenant_a.principal(tenant_a.viewer)):
            return context_pack(
                query=Query(text=question), token_budget=1000, user_id=None,
                now=timezone.now(), packing=replace(packing, search=recording), keep=False,
            ).pack  # fmt: skip

    pack = asked("which cluster does the billing-api run on")
    assert {fact.predicate for fact in pack.facts} == {"RUNS_ON", "OWNED_BY"}
    assert pack.current[0].object_text == "k8s-prod-1"
    assert [query.like for query in calls] == [()]  # structured facts alone: once
    _ingest(tenant_a, tmp_path / "chats")  # now with turns to reorder: read again
    asked("what did John read")
    assert calls[-1].like
