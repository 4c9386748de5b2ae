"""The inverted index behind BM25: postings from the tsvector, exact statistics, RLS, scores."""

from __future__ import annotations

import datetime as dt
import hashlib
from collections import Counter

import pytest
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from curation.domain.tiers import ClaimStatus, Verification
from curation.models import Claim, Entity, Episode, EpisodeStatus, Evidence, Source
from retrieval.adapters.hashing_embedder import HashingEmbedder
from retrieval.domain import lexical
from retrieval.domain.query import Query
from retrieval.models import LexicalCorpus, LexicalTerm, LexicalTermStat
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
