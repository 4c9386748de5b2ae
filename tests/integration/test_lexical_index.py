"""The inverted index behind BM25: postings from the tsvector, exact statistics, RLS, scores;
and what a small workspace's lists read beside a large one."""

from __future__ import annotations

import datetime as dt
import hashlib
import math
from collections import Counter

import pytest
from django.db import DatabaseError, connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from curation.domain.tiers import ClaimStatus, Verification
from curation.models import Claim, Entity, Episode, EpisodeStatus, Evidence, Source
from retrieval.adapters.hashing_embedder import HashingEmbedder
from retrieval.domain import lexical
from retrieval.domain.query import Query
from retrieval.models import LexicalCorpus, LexicalTerm, LexicalTermStat, SearchDocument
from retrieval.services.index import index_claims
from retrieval.services.search import sql as search_sql
from retrieval.services.search.sql import lexical_scores
from retrieval.services.search.sql import where_clause as _where
from tenants import rls
from tests.support.lifecycle import history_written_by_hand
from tests.support.tenancy import Tenant

pytestmark = pytest.mark.django_db
EMBEDDER = HashingEmbedder(dimension=256)
# Plain lower-case ASCII words: the `simple` configuration splits them exactly as
# str.split() does, so the expected statistics can be counted independently in Python.
FACTS = [
    "kafka runs on broker one",
    "the the the the of of in in",
    "redis runs on cache one and cache two",
    "the billing api depends on kafka",
]


def _claims(tenant: Tenant, facts: list[str]) -> list[int]:
    """Published tier-1 claims whose fact texts are exactly `facts` (subject named in each)."""
    group_id, now = tenant.workspace.group_id, timezone.now()
    with rls.tenant_context(tenant.principal(tenant.admin)), history_written_by_hand():
        source = Source.objects.create(
            group_id=group_id, origin_group_id=group_id, name="lexical", kind="markdown",
            config={"root": "/nonexistent"}, trust_tier=1,
        )  # fmt: skip
        episode = Episode.objects.create(
            group_id=group_id, source=source, external_id="lexical.md",
            content_hash=hashlib.sha256(b"lexical").hexdigest(), fetched_at=now,
            status=EpisodeStatus.PROCESSED,
        )  # fmt: skip
        claims = [
            Claim.objects.create(
                group_id=group_id, source=source, predicate="STATES", object_literal=fact,
                subject=Entity.objects.create(group_id=group_id, canonical_name=fact.split()[0]),
                fact_text=fact, confidence=1.0, verification=Verification.AUTO, tier=1,
                authority=1.0, status=ClaimStatus.PUBLISHED, valid_from=now,
            )
            for fact in facts
        ]  # fmt: skip
        for claim in claims:
            Evidence.objects.create(group_id=group_id, claim=claim, episode=episode, snippet="")
        index_claims(claim_ids=[c.pk for c in claims], embedder=EMBEDDER)
    return [c.pk for c in claims]


def _stats(tenant: Tenant) -> tuple[dict[str, int], tuple[int, int] | None]:
    with rls.tenant_context(tenant.principal(tenant.admin)):
        df = dict(LexicalTermStat.objects.values_list("term", "df"))
        corpus = LexicalCorpus.objects.values_list("documents", "tokens").first()
    return df, corpus


def _expected(facts: list[str]) -> tuple[dict[str, int], tuple[int, int]]:
    df = Counter(term for fact in facts for term in set(fact.split()))
    return dict(df), (len(facts), sum(len(fact.split()) for fact in facts))


def test_document_frequencies_match_the_texts_when_claims_are_indexed(tenant_a: Tenant) -> None:
    _claims(tenant_a, FACTS)
    assert _stats(tenant_a) == _expected(FACTS)


def test_postings_carry_each_terms_frequency_and_the_documents_length(tenant_a: Tenant) -> None:
    ids = _claims(tenant_a, FACTS)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        rows = {(r.term, r.tf, r.doc_len) for r in LexicalTerm.objects.filter(claim_id=ids[1])}
    assert rows == {("the", 4, 8), ("of", 2, 8), ("in", 2, 8)}


def test_reindexing_unchanged_claims_leaves_the_statistics_as_they_were(tenant_a: Tenant) -> None:
    ids = _claims(tenant_a, FACTS)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        index_claims(claim_ids=ids, embedder=EMBEDDER)
    assert _stats(tenant_a) == _expected(FACTS)


def test_statistics_shrink_when_a_claim_leaves_the_index(tenant_a: Tenant) -> None:
    ids = _claims(tenant_a, FACTS)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        Claim.objects.filter(pk=ids[2]).delete()  # erased: a published claim leaves so
        index_claims(claim_ids=[ids[2]], embedder=EMBEDDER)
    remaining = [fact for i, fact in enumerate(FACTS) if i != 2]
    df, corpus = _stats(tenant_a)
    assert (df, corpus) == _expected(remaining)
    assert "redis" not in df  # a term no claim has any more is dropped, not left at zero


def test_sql_scores_equal_the_reference_formula_when_computed_in_python(tenant_a: Tenant) -> None:
    ids = _claims(tenant_a, FACTS)
    query = Query(text="Which broker does Kafka run on? the kafka one")
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        where, params = _where(query)
        scores = dict(lexical_scores(query, where, params, 50))
    df, (documents, tokens) = _expected(FACTS)
    terms = query.text.lower().replace("?", "").split()
    expected = {
        claim_id: lexical.bm25(
            terms, Counter(fact.split()), document_frequency=df, documents=documents,
            avg_len=tokens / documents,
        )
        for claim_id, fact in zip(ids, FACTS, strict=True)
    }  # fmt: skip
    assert scores == pytest.approx({k: v for k, v in expected.items() if v > 0}, rel=1e-9)


def test_a_query_word_finds_its_other_forms_scored_as_the_reference_when_english(
    tenant_a: Tenant,
) -> None:
    facts = [
        "caroline is researching adoption agencies",
        "melanie went camping with the kids",
        "the camp was by the lake and the camps were full",
        "research shows camps help kids",
    ]
    ids = _claims(tenant_a, facts)
    query = Query(text="What did Caroline research about camps?")
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        where, params = _where(query)
        scores = dict(lexical_scores(query, where, params, 50))
    df, (documents, tokens) = _expected(facts)
    terms = query.text.lower().replace("?", "").split()
    expected = {
        claim_id: lexical.bm25(
            terms, Counter(fact.split()), document_frequency=df, documents=documents,
            avg_len=tokens / documents,
        )
        for claim_id, fact in zip(ids, facts, strict=True)
    }  # fmt: skip
    assert scores == pytest.approx(expected, rel=1e-9)
    # "researching" and "camping" only through a form of "research" and "camps": found,
    # and weighing less than a document holding the words as asked.
    as_written = {
        claim_id: lexical.bm25(
            terms, Counter(fact.split()), document_frequency=df, documents=documents,
            avg_len=tokens / documents, variant_weight=None,
        )
        for claim_id, fact in zip(ids, facts, strict=True)
    }  # fmt: skip
    assert as_written[ids[0]] > 0  # "caroline" alone
    assert scores[ids[0]] > as_written[ids[0]]
    assert as_written[ids[1]] == 0 < scores[ids[1]]


def test_a_rare_word_outranks_many_common_ones_when_both_match(tenant_a: Tenant) -> None:
    facts = ["kafka runs on broker one", "the the the the of of in in", "the cache", "the api"]
    ids = _claims(tenant_a, facts)
    query = Query(text="the kafka")
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        where, params = _where(query)
        ranked = [claim_id for claim_id, _ in lexical_scores(query, where, params, 50)]
    assert ranked[0] == ids[0]  # ts_rank put the four "the"s first


def test_another_groups_postings_and_statistics_stay_invisible(
    tenant_a: Tenant, tenant_b: Tenant
) -> None:
    _claims(tenant_a, FACTS)
    _claims(tenant_b, ["kafka kafka kafka", "zookeeper keeps kafka metadata"])
    assert _stats(tenant_a) == _expected(FACTS)  # B's kafka claims change none of A's counts
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)), connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM retrieval_lexicalterm WHERE term = 'zookeeper'")
        assert cursor.fetchone() == (0,)


def test_postings_are_never_updated_in_place(tenant_a: Tenant) -> None:
    _claims(tenant_a, FACTS)
    with (
        rls.tenant_context(tenant_a.principal(tenant_a.admin)),
        pytest.raises(DatabaseError, match="Cannot update"),
        transaction.atomic(),
    ):
        LexicalTerm.objects.filter(term="kafka").update(tf=99)


def test_the_postings_only_path_scores_as_the_joined_path_when_valid_now(
    tenant_a: Tenant,
) -> None:
    ids = _claims(tenant_a, FACTS)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        with history_written_by_hand():
            Claim.objects.filter(pk=ids[0]).update(status=ClaimStatus.SUPERSEDED)
        index_claims(claim_ids=[ids[0]], embedder=EMBEDDER)
        query = Query(text="kafka runs on the cache")
        where, params = _where(query)
        fast = lexical_scores(query, where, params, 50)
        joined = lexical_scores(query, f"{where} AND TRUE", params, 50)  # forces the join
    assert fast == joined
    assert ids[0] not in dict(fast)  # superseded: its postings are not "published"


@pytest.mark.parametrize("when", ["before", "during", "after"])
def test_the_postings_only_path_scores_as_the_joined_path_when_as_of_a_time(
    tenant_a: Tenant, when: str
) -> None:
    ids = _claims(tenant_a, FACTS)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        first = Claim.objects.get(pk=ids[0])
        ended = first.valid_from + dt.timedelta(hours=1)
        with history_written_by_hand():
            Claim.objects.filter(pk=ids[0]).update(status=ClaimStatus.SUPERSEDED, valid_to=ended)
        index_claims(claim_ids=[ids[0]], embedder=EMBEDDER)
        instant = {
            "before": first.valid_from - dt.timedelta(seconds=1),
            "during": first.valid_from + dt.timedelta(minutes=30),
            "after": ended + dt.timedelta(seconds=1),
        }[when]
        query = Query(text="kafka runs on the cache", as_of=instant)
        where, params = _where(query)
        assert where == search_sql.AS_OF  # the postings alone answer it
        fast = lexical_scores(query, where, params, 50)
        joined = lexical_scores(query, f"{where} AND TRUE", params, 50)  # forces the join
    assert fast == joined
    assert (ids[0] in dict(fast)) == (when == "during")  # valid then, and only then
    assert bool(fast) == (when != "before")


def test_punctuation_separates_words_alike_when_indexed_and_queried(tenant_a: Tenant) -> None:
    ids = _claims(tenant_a, ["il-6 drives t-cell growth", "il 6 and il/10 levels (1.2 mg)"])
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        terms = set(LexicalTerm.objects.filter(claim_id=ids[0]).values_list("term", flat=True))
        spaced = Query(text="IL 6 t cell")
        hyphenated = Query(text="IL-6 T-cell")
        where, params = _where(spaced)
        assert lexical_scores(spaced, where, params, 50) == lexical_scores(
            hyphenated, where, params, 50
        )
        slashed = Query(text="IL/10 1.2")
        ranked = dict(lexical_scores(slashed, where, params, 50))
    assert terms == {"il", "6", "drives", "t", "cell", "growth"}  # not "il-6", "-6", "t-cell"
    assert set(ranked) == set(ids)  # "il" is in both; "10", "1", "2" only in the second
    assert ranked[ids[1]] > ranked[ids[0]]


def test_candidates_are_scored_from_every_posting_when_lists_run_past_the_cut(
    tenant_a: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search_sql, "POSTINGS_PER_TERM", 1)
    ids = _claims(tenant_a, FACTS)
    query = Query(text="the kafka runs on one cache")
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        where, params = _where(query)
        scores = dict(lexical_scores(query, where, params, 50))
    df, (documents, tokens) = _expected(FACTS)
    expected = {
        claim_id: lexical.bm25(
            query.text.split(), Counter(fact.split()), document_frequency=df,
            documents=documents, avg_len=tokens / documents,
        )
        for claim_id, fact in zip(ids, FACTS, strict=True)
    }  # fmt: skip
    # One posting a term finds the candidates; each candidate's score is still its whole
    # BM25, "on" and "one" included where their single posting read was another claim's.
    assert scores == pytest.approx({k: expected[k] for k in scores}, rel=1e-9)
    assert ids[2] in scores  # found by "cache" alone


# --- What a small workspace beside a large one reads -----------------------------------

LARGE = [f"kafka broker {n}" for n in range(300)]  # short: the best postings of "kafka"
SMALL = [f"kafka runs on broker {n} of the small shared messaging cluster" for n in range(3)]


def _nodes(plan: dict) -> list[dict]:
    """Every node of an EXPLAIN (FORMAT JSON) plan, depth first."""
    found = [plan]
    for child in plan.get("Plans", []):
        found.extend(_nodes(child))
    return found


def _analyze() -> None:
    """The planner's statistics of the postings and documents as the test made them:
    seen after an auto-analyze of the empty tables between two earlier tests, the
    rescoring's probe was planned on the group's index (skipping over the groups)
    instead of the primary key, and read the other workspace's postings."""
    with connection.cursor() as cursor:
        cursor.execute(
            "ANALYZE retrieval_lexicalterm, retrieval_lexicaltermstat, "
            "retrieval_lexicalcorpus, retrieval_searchdocument"
        )


def _executed(statement: str) -> list[dict]:
    """The nodes of `statement` as it ran (EXPLAIN ANALYZE), as the application's role."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT rolbypassrls OR rolsuper FROM pg_roles WHERE rolname = current_user")
        assert cursor.fetchone() == (False,), "the test must run as a role RLS applies to"
        cursor.execute("SET LOCAL enable_seqscan = off")  # test-sized tables are one page
        cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {statement}")
        [[explained]] = cursor.fetchall()
    return _nodes(explained[0]["Plan"])


@pytest.mark.parametrize("as_of", [False, True])
def test_a_small_workspace_reads_only_its_own_postings_beside_a_large_one(
    tenant_a: Tenant, tenant_b: Tenant, as_of: bool
) -> None:
    # Its cost must follow its own postings: led by the term, the index gave the large
    # workspace's best postings of "kafka" first, each read and dropped by row-level
    # security before the small one's were reached.
    _claims(tenant_a, LARGE)
    small = _claims(tenant_b, SMALL)
    _analyze()
    query = Query(text="kafka", as_of=timezone.now() if as_of else None)
    where, params = _where(query)
    with (
        rls.tenant_context(tenant_b.principal(tenant_b.admin)),
        CaptureQueriesContext(connection) as ran,
    ):
        found = lexical_scores(query, where, params, 50)
        [statement] = [
            q["sql"] for q in ran.captured_queries if "retrieval_lexicalterm" in q["sql"]
        ]
        nodes = _executed(statement)
    assert sorted(dict(found)) == sorted(small)
    postings = [n for n in nodes if n.get("Relation Name") == "retrieval_lexicalterm"]
    scans = {  # the postings' indexes read (the rescoring's probes: its key)
        n["Index Name"] for n in nodes
        if n.get("Index Name", "").startswith(("lexterm_", "retrieval_lexicalterm_pkey"))
    }  # fmt: skip
    assert scans & {"lexterm_group_term_impact", "lexterm_group_published"}, scans
    assert scans <= {"lexterm_group_term_impact", "lexterm_group_published",
                     "retrieval_lexicalterm_pkey"}, scans  # fmt: skip
    assert not [n for n in postings if n["Node Type"] == "Seq Scan"]
    read = sum(n["Actual Rows"] * n["Actual Loops"] for n in postings)
    dropped = sum(n.get("Rows Removed by Filter", 0) for n in postings)
    plan = [
        (n["Node Type"], n.get("Index Name"), n.get("Index Cond"), n.get("Filter")) for n in nodes
    ]
    assert dropped == 0, f"{dropped} postings of another workspace read and dropped: {plan}"
    assert read <= 2 * len(SMALL), read  # its own: the candidates, then their rescoring


def test_a_small_workspace_ranks_its_vectors_exactly_without_the_shared_index(
    tenant_a: Tenant, tenant_b: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    # At most EXACT_DOCUMENTS documents: ranked exactly, through the index on its groups,
    # never after a walk of the HNSW index every workspace shares.
    _claims(tenant_a, LARGE)
    small = _claims(tenant_b, [*SMALL, "the billing api depends on kafka"])
    query = Query(text="the kafka cluster")
    where, params = _where(query)
    [vector] = EMBEDDER.embed([query.text])
    with rls.tenant_context(tenant_b.principal(tenant_b.admin)):
        documents = {
            d.claim_id: [float(x) for x in d.embedding]
            for d in SearchDocument.objects.filter(claim_id__in=small)
        }
        with CaptureQueriesContext(connection) as ran:
            found = search_sql.vector(vector, where, params, 10, model=EMBEDDER.model)
        statements = [q["sql"] for q in ran.captured_queries]
        nodes = _executed(statements[-1])
        monkeypatch.setattr(search_sql, "EXACT_DOCUMENTS", 0)  # as if it saw many
        with CaptureQueriesContext(connection) as indexed:
            through_index = search_sql.vector(vector, where, params, 10, model=EMBEDDER.model)
    assert not any("hnsw" in s for s in statements), statements
    assert any("hnsw" in q["sql"] for q in indexed.captured_queries)

    def cosine(a: list[float], b: list[float]) -> float:
        dot = sum(x * y for x, y in zip(a, b, strict=True))
        return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))

    expected = sorted(documents, key=lambda c: (-cosine(vector, documents[c]), c))
    assert [claim for claim, _ in found] == expected
    assert [claim for claim, _ in through_index] == expected  # the same list, either way
    [scan] = [n for n in nodes if n.get("Relation Name") == "retrieval_searchdocument"]
    assert scan["Node Type"] in {"Index Scan", "Bitmap Heap Scan"}, scan  # on its groups
    assert scan.get("Rows Removed by Filter", 0) == 0, "another workspace's documents read"
