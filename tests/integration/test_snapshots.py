"""Knowledge snapshots: taken by an admin, built by a real maintenance worker in one
repeatable-read transaction, sealed; searched, they answer as they did when sealed,
whatever the live index does since. Tampered, unsealed or unreproducible ones are
refused (409, with the reason); erasure removes its content from them and re-seals them.

Real Postgres (RLS as the app role), Redis, FalkorDB, the real ingest pipeline and
outbox, and the REST API.
"""

from __future__ import annotations

import datetime as dt
import subprocess
import time
from collections.abc import Iterator
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import DatabaseError, connection, transaction
from django.db.models import Count
from django.test import Client

from curation.models import Source
from curation.tasks import process_outbox
from curation.usecases import ingest_now
from retrieval.domain import lexical, ranking
from retrieval.domain.query import Query
from retrieval.domain.ranking import Weights
from retrieval.models import (
    SearchDocument,
    Snapshot,
    SnapshotDocument,
    SnapshotTerm,
    SnapshotTermStat,
)
from retrieval.services.search import sql
from retrieval.services.search.snapshot_sql import SnapshotIndex
from retrieval.services.snapshots import snapshot_take
from retrieval.services.weights import weight_set_activate, weight_set_create
from tenants import rls
from tenants.models import AuditEvent
from tests.support.ingest import T0, T1, ingest_billing_history, ingest_markdown, write_at
from tests.support.snapshots import seal, sealed_snapshot
from tests.support.tenancy import Tenant
from tests.support.workers import celery_worker

QUESTION = "which cluster does the billing-api run on"


@pytest.fixture
def maintenance_worker(app_database_url: str, tmp_path: Path) -> Iterator[subprocess.Popen]:
    with celery_worker(
        database_url=app_database_url, log_path=tmp_path / "worker.log", queue="maintenance",
        extra_env={"VERA_WORKER__WARM_EMBEDDER": "false"},
    ) as process:  # fmt: skip
        yield process


def _get(client: Client, user, url: str, **params: object):
    client.force_login(user)
    return client.get(url, params)


def _post(client: Client, user, url: str, **body: object):
    client.force_login(user)
    return client.post(url, body, content_type="application/json")


def _search(client: Client, user, **params: object) -> tuple[int, dict]:
    response = _get(client, user, "/api/v1/search", q=QUESTION, k=10, **params)
    return response.status_code, response.json()


def _answer(body: dict) -> list[tuple]:
    """What a reader of the hits sees, in order: fact, status, validity, score, citations."""
    return [
        (hit["claim_id"], hit["fact"], hit["status"], hit["valid_from"], hit["valid_to"],
         hit["score"], [c["snippet"] for c in hit["citations"]])
        for hit in body["hits"]
    ]  # fmt: skip


def _term_counts(snapshot_id: int) -> tuple[dict[str, int], dict[str, int]]:
    """The snapshot's document frequencies as its triggers keep them, and recounted."""
    kept = dict(SnapshotTermStat.objects.filter(snapshot_id=snapshot_id).values_list("term", "df"))
    counted = dict(
        SnapshotTerm.objects.filter(snapshot_id=snapshot_id)
        .values("term")
        .annotate(n=Count("*"))
        .values_list("term", "n")
    )
    return kept, counted


def _sealed(client: Client, user, snapshot_id: int) -> dict:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        body = _get(client, user, f"/api/v1/snapshots/{snapshot_id}").json()
        if body["status"] != "building":
            return body
        time.sleep(0.3)
    pytest.fail("the snapshot was not built within 90 s")


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_sealed_snapshot_answers_as_it_did_whatever_the_index_does_since(
    tenant_a: Tenant, tenant_b: Tenant, tmp_path: Path, client: Client,
    maintenance_worker: subprocess.Popen,
) -> None:  # fmt: skip
    root = tmp_path / "a"
    ingest_billing_history(tenant_a, root)
    ingest_markdown(tenant_b, tmp_path / "b", {"b.md": "# B\n\nThe billing-api runs on b-1.\n"})
    group_id = tenant_a.workspace.group_id
    url = "/api/v1/snapshots"

    # Who may take one, and bad input.
    assert _post(client, tenant_a.viewer, url, scope=group_id, name="x").status_code == 403
    assert _post(client, tenant_b.admin, url, scope=group_id, name="x").status_code == 403
    assert _post(client, tenant_a.admin, url, scope=group_id).status_code == 400
    assert _post(client, tenant_a.admin, url, scope=group_id, name=" ").status_code == 400
    taken = _post(client, tenant_a.admin, url, scope=group_id, name="Q4 audit", reason="SOX")
    assert taken.status_code == 202, taken.content
    assert taken.json()["status"] == "building"
    snapshot_id = taken.json()["id"]

    # The worker builds and seals it (the request sent it the job after commit).
    body = _sealed(client, tenant_a.viewer, snapshot_id)
    assert body["status"] == "sealed", body
    assert len(body["checksum"]) == 64
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        indexed = SearchDocument.objects.count()  # every status: `as_of` works inside it
        assert SearchDocument.objects.exclude(status="published").exists()
    assert body["counts"]["documents"] == indexed
    assert body["pins"]["ranker_version"] == ranking.RANKER_VERSION
    assert body["pins"]["weights"]["version"] == 0
    assert body["pins"]["embedding"]["provider"] == "hashing"
    assert "RUNS_ON" in body["pins"]["predicates"]["present"]
    status, then = _search(client, tenant_a.viewer, snapshot=snapshot_id)
    assert status == 200, then
    assert then["hits"]
    assert all(hit["id"] is None for hit in then["hits"])  # votes are for live hits
    assert "k8s-prod-2" in then["hits"][0]["fact"]
    status, live_then = _search(client, tenant_a.viewer)
    assert [h["claim_id"] for h in live_then["hits"]] == [h["claim_id"] for h in then["hits"]]

    # The live knowledge moves on: a new value supersedes, a vote, new weights.
    later = T1 + dt.timedelta(days=1)
    write_at(root, "billing.md", "# Billing\n\nThe billing-api runs on k8s-prod-3.\n", later)
    admin = tenant_a.principal(tenant_a.admin)
    with rls.tenant_context(admin):
        source = Source.objects.get()
    assert not ingest_now(source_id=source.pk, group_id=group_id).error
    hit_id = live_then["hits"][0]["id"]
    vote = _post(client, tenant_a.viewer, "/api/v1/feedback", hit_id=hit_id, helpful=False)
    assert vote.status_code == 201
    with rls.tenant_context(admin):
        chosen = weight_set_create(
            group_id=group_id, origin="manual",
            weights=Weights.from_mapping({"relevance": 1, "authority": 1, "verification": 1,
                                          "recency": 5, "feedback": 1, "confidence": 1}),
        )  # fmt: skip
        weight_set_activate(actor=admin, weight_set_id=chosen.pk, confirm=True)
    while process_outbox():
        pass
    status, live_now = _search(client, tenant_a.viewer)
    assert "k8s-prod-3" in live_now["hits"][0]["fact"]
    assert _answer(live_now) != _answer(live_then)

    # The snapshot: the same hits, scores, statuses, validity and citations.
    status, again = _search(client, tenant_a.viewer, snapshot=snapshot_id)
    assert status == 200
    assert _answer(again) == _answer(then)
    assert [w["version"] for w in again["weights"]] == [0]
    # Time travel inside it: as of a day after T0, k8s-prod-1 was the value.
    day = (T0 + dt.timedelta(days=1)).isoformat()
    status, old = _search(client, tenant_a.viewer, snapshot=snapshot_id, as_of=day)
    assert "k8s-prod-1" in old["hits"][0]["fact"]

    # Another tenant cannot see it; a bad id is a 400 with a message.
    assert _search(client, tenant_b.viewer, snapshot=snapshot_id)[0] == 404
    assert _get(client, tenant_b.viewer, f"{url}/{snapshot_id}").status_code == 404
    assert snapshot_id not in [s["id"] for s in _get(client, tenant_b.admin, url).json()]
    status, bad = _search(client, tenant_a.viewer, snapshot="x")
    assert status == 400
    assert "snapshot" in bad

    # Sealed rows cannot be edited; a deleted posting breaks the seal (and moves the
    # generation, so the next search re-verifies): refused.
    with rls.tenant_context(admin):
        generation = Snapshot.objects.get(pk=snapshot_id).generation
        with pytest.raises(DatabaseError, match="Cannot update"), transaction.atomic():
            SnapshotDocument.objects.filter(snapshot_id=snapshot_id).update(text="forged")
        with connection.cursor() as cursor:
            cursor.execute(
                "DELETE FROM retrieval_snapshotterm WHERE ctid IN (SELECT ctid FROM"
                " retrieval_snapshotterm WHERE snapshot_id = %s LIMIT 1)",
                [snapshot_id],
            )
    with rls.tenant_context(admin):
        assert Snapshot.objects.get(pk=snapshot_id).generation > generation
    status, refused = _search(client, tenant_a.viewer, snapshot=snapshot_id)
    assert status == 409
    assert "no longer matches its seal" in refused["detail"]
    with rls.tenant_context(admin):
        assert AuditEvent.objects.filter(action="snapshot.take").count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["scope", "group_id"])
def test_a_snapshot_is_taken_in_the_scope_when_named_either_way(
    tenant_a: Tenant, client: Client, name: str
) -> None:
    group = tenant_a.workspace.group_id
    # Not built: the build is sent on commit, and this test's transaction never commits.
    taken = _post(client, tenant_a.admin, "/api/v1/snapshots", **{name: group}, name="Q4")
    assert taken.status_code == 202, taken.content
    assert taken.json()["group_id"] == group  # a record says where it lives with `group_id`
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        assert Snapshot.objects.get(pk=taken.json()["id"]).group_id == group


@pytest.mark.django_db
def test_a_snapshot_is_refused_with_a_message_unless_its_scope_is_named_consistently(
    tenant_a: Tenant, client: Client
) -> None:
    group = tenant_a.workspace.group_id
    url = "/api/v1/snapshots"
    neither = _post(client, tenant_a.admin, url, name="Q4")
    both = _post(client, tenant_a.admin, url, scope=group, group_id="w:b", name="Q4")
    agreeing = _post(client, tenant_a.admin, url, scope=group, group_id=group, name="Q4")

    assert (neither.status_code, neither.json()) == (400, {"scope": ["This field is required."]})
    assert (both.status_code, both.json()) == (
        400, {"scope": ["disagrees with group_id (deprecated): send scope alone"]},
    )  # fmt: skip
    assert agreeing.status_code == 202, agreeing.content
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        assert Snapshot.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_erasure_removes_its_content_from_sealed_snapshots_which_are_resealed(
    tenant_a: Tenant, tmp_path: Path, client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = {
        "billing.md": "# Billing\n\nThe billing-api runs on k8s-secret-7. "
        "The billing-api is owned by payments-team.\n",
        "team.md": "# Team\n\nThe billing-api is owned by payments-team.\n",
        "ledger.md": "# Ledger\n\nThe ledger-api runs on k8s-prod-1.\n",
    }
    source_id = ingest_markdown(tenant_a, tmp_path, docs)
    other_id = ingest_markdown(
        tenant_a, tmp_path / "o", {"o.md": "# O\n\nThe audit-api runs on k8s-prod-9.\n"},
        name="other",
    )  # fmt: skip
    group_id = tenant_a.workspace.group_id
    admin = tenant_a.principal(tenant_a.admin)
    with rls.tenant_context(admin):
        snapshot = snapshot_take(actor=admin, group_id=group_id, name="before")
        unsealed = snapshot_take(actor=admin, group_id=group_id, name="pending")
    seal(snapshot)

    def hits(q: str, snapshot_id: int) -> list[str]:
        response = _get(client, tenant_a.viewer, "/api/v1/search", q=q, snapshot=snapshot_id)
        assert response.status_code == 200, response.content
        return [hit["fact"] for hit in response.json()["hits"]]

    assert any("k8s-secret-7" in fact for fact in hits("k8s-secret-7", snapshot.pk))
    # Unsealed, or sealed by another ranker: refused, saying why.
    response = _get(client, tenant_a.viewer, "/api/v1/search", q="x", snapshot=unsealed.pk)
    assert response.status_code == 409
    assert "still being built" in response.json()["detail"]
    monkeypatch.setattr(ranking, "RANKER_VERSION", "0-other")
    response = _get(client, tenant_a.viewer, "/api/v1/search", q="x", snapshot=snapshot.pk)
    assert response.status_code == 409
    assert "cannot reproduce it" in response.json()["detail"]
    monkeypatch.undo()

    with rls.tenant_context(admin):
        quoting = SnapshotDocument.objects.filter(snapshot=snapshot, source_id=source_id).count()
    erased = _post(
        client, tenant_a.admin, f"/api/v1/sources/{source_id}/erase", reason="GDPR", confirm=True
    )
    assert erased.status_code == 200, erased.content
    tombstone = erased.json()
    assert tombstone["counts"]["snapshot_documents"] == quoting  # every copy of the source

    with rls.tenant_context(admin):
        snapshot.refresh_from_db()
        unsealed.refresh_from_db()
        left = sorted(
            SnapshotDocument.objects.filter(snapshot=snapshot).values_list("text", flat=True)
        )
    assert snapshot.status == Snapshot.Status.SEALED
    assert f"re-sealed after the erasure of source {source_id}" in snapshot.notes
    with rls.tenant_context(admin):
        kept, counted = _term_counts(snapshot.pk)
    assert kept == counted  # the erased postings' terms counted down, to none for some
    assert "secret" not in kept
    assert "while building" in unsealed.notes  # a build under way starts again
    assert left
    assert all("k8s-secret-7" not in text and "payments-team" not in text for text in left)
    for q in ("k8s-secret-7", "billing-api payments-team", "ledger-api"):
        assert not any(
            word in fact for fact in hits(q, snapshot.pk) for word in ("secret", "ledger", "team")
        )
    assert any("audit-api" in fact for fact in hits("audit-api", snapshot.pk))  # the rest stays
    out = StringIO()
    call_command("erasure_verify", str(tombstone["id"]), stdout=out)
    assert "is complete: nothing of it" in out.getvalue()
    assert other_id


@pytest.mark.django_db(transaction=True)
def test_snapshot_postings_are_read_best_first_by_an_impact_under_the_seal(
    tenant_a: Tenant, tmp_path: Path, client: Client
) -> None:
    docs = {
        f"s{n}.md": f"# Service {n}\n\nThe api-{n} runs on k8s-prod-{n}. "
        + "The api-gateway fronts it. " * n
        for n in range(1, 7)
    }
    ingest_markdown(tenant_a, tmp_path, docs)
    group_id = tenant_a.workspace.group_id
    admin = tenant_a.principal(tenant_a.admin)
    snapshot = sealed_snapshot(tenant_a, name="impact")
    assert snapshot.pins["postings_per_term"] == sql.POSTINGS_PER_TERM
    with rls.tenant_context(admin):
        kept, counted = _term_counts(snapshot.pk)
    assert kept == counted
    assert kept["gateway"] == 6
    counts = snapshot.counts
    avg = counts["tokens"] / counts["lexical_documents"]
    index = SnapshotIndex(snapshot.pk, counts["lexical_documents"], avg, per_term=1)
    where, params = sql.where_clause(Query(text="gateway"))
    with rls.tenant_context(admin):
        postings = list(
            SnapshotTerm.objects.filter(snapshot=snapshot, term="gateway").values_list(
                "claim_id", "tf", "doc_len", "impact"
            )
        )
        # Each posting's impact is BM25's term-frequency part at the snapshot's average.
        for _, tf, doc_len, impact in postings:
            expected = (
                tf
                * (lexical.K1 + 1)
                / (tf + lexical.K1 * (1 - lexical.B + lexical.B * doc_len / avg))
            )
            assert impact == pytest.approx(expected)
        best = max(postings, key=lambda row: (row[3], -row[0]))[0]
        # One posting a term read: the best by impact; all of them: every posting's claim.
        assert index.fulltext(Query(text="gateway"), where, params, 10) == [best]
        every = SnapshotIndex(snapshot.pk, index.size, avg, per_term=None)
        pinned = SnapshotIndex(snapshot.pk, index.size, avg, per_term=sql.POSTINGS_PER_TERM)
        # At the snapshot's instant, as of a time, and filtered (the documents joined).
        instant, seen = snapshot.taken_at, 0
        for text in ("gateway", "api gateway k8s prod 3", "runs on"):
            for asked in (
                Query(text=text),
                Query(text=text, as_of=instant),
                Query(text=text, predicate="RUNS_ON"),
            ):
                where, params = sql.where_clause(asked)
                found = every.fulltext(asked, where, params, 10)
                assert found or asked.predicate, asked
                assert pinned.fulltext(asked, where, params, 10) == found
                seen += bool(found)
        assert seen >= 7  # a runs-on question finds the RUNS_ON claims

        # The impact is under the seal: a posting put back with another is refused.
        claim_id, tf, doc_len, impact = postings[0]
        with connection.cursor() as cursor:
            cursor.execute(
                "DELETE FROM retrieval_snapshotterm WHERE snapshot_id = %s AND term = 'gateway'"
                " AND claim_id = %s",
                [snapshot.pk, claim_id],
            )
            cursor.execute(
                "INSERT INTO retrieval_snapshotterm"
                " (group_id, snapshot_id, term, claim_id, tf, doc_len, impact)"
                " VALUES (%s, %s, 'gateway', %s, %s, %s, %s)",
                [group_id, snapshot.pk, claim_id, tf, doc_len, impact + 1],
            )
    response = _get(client, tenant_a.viewer, "/api/v1/search", q="gateway", snapshot=snapshot.pk)
    assert response.status_code == 409
    assert "no longer matches its seal" in response.json()["detail"]


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_snapshot_reads_other_forms_of_a_word_only_when_sealed_with_them(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    docs = {f"s{n}.md": f"# Service {n}\n\nThe api-gateway fronts the api-{n}." for n in (1, 2)}
    ingest_markdown(tenant_a, tmp_path, docs)
    snapshot = sealed_snapshot(tenant_a, name="forms")
    assert snapshot.pins["lexical_variant_weight"] == lexical.VARIANT_WEIGHT
    counts = snapshot.counts
    size, avg = counts["lexical_documents"], counts["tokens"] / counts["lexical_documents"]
    asked = Query(text="fronting")  # the documents say "fronts"
    where, params = sql.where_clause(asked)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        pinned = SnapshotIndex(
            snapshot.pk,
            size,
            avg,
            per_term=sql.POSTINGS_PER_TERM,
            variant_weight=snapshot.pins["lexical_variant_weight"],
        ).fulltext(asked, where, params, 10)
        # A snapshot sealed before forms were read pins none: its words as written.
        before = SnapshotIndex(snapshot.pk, size, avg, per_term=sql.POSTINGS_PER_TERM)
        assert before.fulltext(asked, where, params, 10) == []
    assert len(pinned) == 2
