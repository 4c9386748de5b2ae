"""The three-stage search: vector + full text fused by RRF, the six-signal blend, a reranker.

Stage 1 (`stage1`) runs the two halves of `sql`; stage 2 blends the fused candidates'
signals (`retrieval.domain.ranking`); stage 3 lets the configured cross-encoder
re-score the head. Every returned hit is logged with the signals it was ranked by and
the weight set that blended them: each workspace's active set, read in the search's
own transaction, so an activation counts from the next search in every process.
`search` runs the stages, after step 0 reads the question (`understanding`), as the
steps of one `_Run`, which holds the request's settings and stopwatch.
"""

from __future__ import annotations

import contextvars
import datetime as dt
import logging
import os
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from django.db import transaction
from django.utils import timezone

from curation.domain.validity import VALID_NOW
from curation.ports import Embedder
from retrieval.domain import expansion, ranking
from retrieval.domain.fusion import ListWeights, list_weights
from retrieval.domain.query import Query
from retrieval.domain.results import Hit, Result, Stage3
from retrieval.domain.understanding import Understanding, spoken
from retrieval.ports import EmbedderCatalog, RerankerError, Reranking
from retrieval.selectors import weights_active
from retrieval.services.embedding import search_models
from retrieval.services.search import sql
from retrieval.services.search.timing import Stopwatch
from retrieval.services.search.understanding import (
    OntologyReader,
    default_ontologies,
    understand,
    with_meaning,
)

logger = logging.getLogger(__name__)

STAGE1_DEPTH = 50
# The understood list's weight in the fusion when nothing else sets it: a workspace's
# active weight set does (calibrated from votes), VERA_SEARCH__FUSION_WEIGHTS
# `understood=` overrides both.
UNDERSTOOD_WEIGHT = ranking.DEFAULT_UNDERSTOOD

# One embedder for every workspace, or the offered models, each workspace its own.
Embedders = Embedder | EmbedderCatalog
# Query embedders named outright, each with whether it is a companion model (a snapshot
# search uses the models it pinned, not the workspaces' current ones).
Pinned = list[tuple[Embedder, bool]]


class Index(Protocol):
    """What stage 1 and the blend read: the live index (the `sql` module) or a sealed
    snapshot (`snapshot_sql.SnapshotIndex`)."""

    def fulltext(self, query: Query, where: str, params: list[Any], depth: int) -> list[int]: ...

    def term_coverage(self, text: str) -> float: ...

    def understood(
        self,
        names: Sequence[str],
        predicates: Sequence[str],
        where: str,
        params: list[Any],
        depth: int,
        *,
        objects: Sequence[int] = (),
    ) -> list[int]: ...

    def vector(
        self,
        embedding: list[float],
        where: str,
        params: list[Any],
        depth: int,
        *,
        model: str,
        companion: bool = False,
    ) -> list[tuple[int, float]]: ...

    def centroid(
        self, claim_ids: Sequence[int], *, model: str, dim: int, companion: bool = False
    ) -> list[float] | None: ...

    def votes(self, claim_ids: list[int]) -> dict[int, tuple[int, int]]: ...

    def documents(self, claim_ids: list[int], *, with_text: bool) -> dict[int, sql.Candidate]: ...


@dataclass(frozen=True)
class Lists:
    """Stage 1's rankings (claim ids, best first, by list name) and the vector lists' scores.

    The vector list of the first (or only) model is "vector"; a search over workspaces
    indexed with different models has one more list per model, "vector@<model>"
    (vectors compare only within a model), and one per companion model of the
    workspaces searched with a second one, "companion@<model>". `languages` is each
    vector list's embedder's languages (None: any).
    """

    rankings: dict[str, list[int]]
    dense_scores: list[float]
    coverage: float = 1.0  # the share of the query's words the index knows
    languages: dict[str, frozenset[str] | None] = field(default_factory=dict)
    understanding: Understanding = field(default_factory=Understanding)


def stage1(
    query: Query,
    *,
    embedder: Embedders | None,
    depth: int = STAGE1_DEPTH,
    watch: Stopwatch | None = None,
) -> dict[str, list[int]]:
    """The full-text and vector rankings (each its top `depth`) under the valid-time filter."""
    return stage1_lists(query, embedder=embedder, depth=depth, watch=watch).rankings


def query_embedders(embedder: Embedders | None) -> list[tuple[Embedder, bool]]:
    """The query embedders a search uses, each with whether it is a companion model: one
    per model among the workspaces it sees, then their companion models (one read)."""
    if embedder is None:
        return []
    if not isinstance(embedder, EmbedderCatalog):
        return [(embedder, False)]
    providers, companions = search_models(embedder)
    return [(embedder.query(p), False) for p in providers] + [
        (embedder.query(p), True) for p in companions
    ]


@dataclass(frozen=True)
class Pending:
    """A query embedding under way: by which model, whether a companion, and its vectors."""

    embedder: Embedder
    companion: bool
    vectors: Future[list[list[float]]]


def embeddings_start(
    query: Query, *, embedder: Embedders | None, pinned: Pinned | None = None
) -> list[Pending]:
    """Start embedding the query with every model the search uses (`pinned`, when given,
    names them), on this process's pool, so the work before stage 1 overlaps it.

    Each embedding runs in a copy of this context, so a provider's span (when tracing is
    on) belongs to the search that called it. Django's connections stay with their
    thread: asgiref tags the storage it keeps in a context variable with its thread.
    """
    embedders = list(pinned) if pinned is not None else query_embedders(embedder)
    pool = _embedding_pool()
    return [
        Pending(
            each, companion, pool.submit(contextvars.copy_context().run, each.embed, [query.text])
        )
        for each, companion in embedders
    ]


def stage1_lists(
    query: Query,
    *,
    embedder: Embedders | None,
    depth: int = STAGE1_DEPTH,
    watch: Stopwatch | None = None,
    index: Index = sql,
    pinned: Pinned | None = None,
    understanding: Understanding | None = None,
    started: list[Pending] | None = None,
) -> Lists:
    """`stage1`, with the vector lists' cosine similarities (for `fuse`).

    `index` is what is searched (the live index unless a snapshot); `pinned`, when
    given, names the query embedders instead of `embedder`; `started` are the query's
    embeddings already under way (`embeddings_start`). With an `understanding` that
    names entities, a third list holds their claims of the relation asked for
    ("understood"; the relation is scored again with the query's embedding first).
    """
    watch = watch or Stopwatch()
    where, params = sql.where_clause(query)
    # The query is embedded while Postgres runs the lexical half: the model and the
    # database wait both release the GIL, so the two overlap instead of adding up.
    pending = started if started is not None else embeddings_start(
        query, embedder=embedder, pinned=pinned
    )  # fmt: skip
    # A question that names an entity is embedded a second time without it ("what does
    # run on"), by the first model: the relation it asks for is read from that vector,
    # which the name cannot pull towards whatever it happens to resemble.
    if query.like:
        return _like_lists(query, pending, where, params, depth, watch=watch, index=index)
    first = next((each for each in pending if not each.companion), None)
    asked: Future[list[list[float]]] | None = None
    if first is not None and understanding is not None and understanding.entities:
        asked = _embedding_pool().submit(
            contextvars.copy_context().run, first.embedder.embed,
            [spoken(understanding.question)],
        )  # fmt: skip
    with watch.step("lexical"):
        rankings = {"fulltext": index.fulltext(query, where, params, depth)}
        coverage = index.term_coverage(query.text) if pending else 1.0
    scores: list[float] = []
    languages: dict[str, frozenset[str] | None] = {}
    for each in pending:
        with watch.step("embed"):  # only the wait left after the lexical half
            vectors = _query_vectors(each.vectors)
        if not vectors:
            continue
        model = each.embedder.model
        with watch.step("vector"):
            nearest = index.vector(
                vectors[0], where, params, depth, model=model, companion=each.companion
            )
        if each.companion:
            name = f"companion@{model}"
        else:
            name = "vector" if "vector" not in rankings else f"vector@{model}"
        rankings[name] = [claim_id for claim_id, _ in nearest]
        languages[name] = getattr(each.embedder, "languages", None)
        scores += [score for _, score in nearest]
        if each is first and asked is not None and understanding is not None:
            with watch.step("embed"):
                meaning = _query_vectors(asked)
            if meaning:
                understanding = with_meaning(understanding, meaning[0], each.embedder)
    found = understanding or Understanding()
    # The understood list is the asked relation of the named entities. Without a
    # relation it would be every fact about them, by authority and date, which outranks
    # the passage a question is about (a name in a question over prose); the full-text
    # and vector lists already find the entity's facts by its name.
    if found.entities and found.predicates:
        with watch.step("understood"):
            rankings["understood"] = index.understood(
                found.entities, found.predicates, where, params, depth, objects=found.objects
            )
    return Lists(
        rankings=rankings, dense_scores=scores, coverage=coverage, languages=languages,
        understanding=found,
    )  # fmt: skip


def _like_lists(
    query: Query,
    pending: list[Pending],
    where: str,
    params: list[Any],
    depth: int,
    *,
    watch: Stopwatch,
    index: Index,
) -> Lists:
    """Stage 1 of a search more like `query.like`: each model's vector list with the
    question's vector moved towards those claims' centroid by that model
    (`expansion.toward`), and no other list (the question's own words and entities were
    the first search's). A model none of the claims has a vector by gives no list."""
    rankings: dict[str, list[int]] = {}
    scores: list[float] = []
    for each in pending:
        with watch.step("embed"):
            vectors = _query_vectors(each.vectors)
        if not vectors:
            continue
        model = each.embedder.model
        with watch.step("vector"):
            mean = index.centroid(
                query.like, model=model, dim=len(vectors[0]), companion=each.companion
            )
            if mean is None:
                continue
            nearest = index.vector(
                expansion.toward(vectors[0], mean), where, params, depth, model=model,
                companion=each.companion,
            )  # fmt: skip
        name = f"companion@{model}" if each.companion else (
            "vector" if "vector" not in rankings else f"vector@{model}"
        )  # fmt: skip
        rankings[name] = [claim_id for claim_id, _ in nearest]
        scores += [score for _, score in nearest]
    return Lists(rankings=rankings, dense_scores=scores)


def is_vector(name: str) -> bool:
    """Whether a stage-1 list is a vector list ("vector", "vector@<model>" or
    "companion@<model>")."""
    return name == "vector" or name.startswith(("vector@", "companion@"))


def fuse(
    query: Query,
    lists: Lists,
    *,
    embedder: Embedders | None = None,
    base: Mapping[str, float] | None = None,
) -> tuple[dict[int, float], ListWeights]:
    """Weighted RRF (k = 1) of stage 1's lists, each weighed for this query.

    `base` weighs the lists by name (`fulltext`, `vector`; every model's vector list
    takes `vector`'s; a name it omits counts 1.0); a list is then weakened when it
    cannot be informative for this query (`retrieval.domain.fusion`: a query outside an
    English embedder's language, or whose words the index hardly knows). A list of
    weight 0 is left out, so its noise does not even become a candidate.
    """
    if query.like:  # moved towards the hits, each vector is in their language: plain RRF
        weights = dict.fromkeys(lists.rankings, 1.0)
        fused = ranking.rrf(list(lists.rankings.values()), k=ranking.RRF_K) if weights else {}
        return fused, ListWeights(weights=weights, reason=None)
    base = base or {}
    vectors = [name for name in lists.rankings if is_vector(name)]
    weights = {"fulltext": base.get("fulltext", 1.0)}
    if "understood" in lists.rankings:
        weights["understood"] = base.get("understood", UNDERSTOOD_WEIGHT)
    reasons = []
    for name in vectors or [""]:
        languages = lists.languages.get(name, getattr(embedder, "languages", None))
        chosen = list_weights(
            query_text=query.text,
            languages=languages if name else None,
            coverage=lists.coverage,
            has_vector=bool(name),
            base=base,
        )
        if name:
            weights[name] = chosen.weights["vector"]
        # The full-text list sits out when a usable vector list makes it noise.
        weights["fulltext"] = min(weights["fulltext"], chosen.weights["fulltext"])
        if chosen.reason and chosen.reason not in reasons:
            reasons.append(chosen.reason)
    kept = {
        name: ids
        for name, ids in lists.rankings.items()
        if ids and (weights.get(name, 1.0) > 0 or len(lists.rankings) == 1)
    }
    if not kept:  # every vector list sat out and full text with them: never both
        kept = dict(lists.rankings)
    fused = ranking.rrf(
        list(kept.values()), k=ranking.RRF_K, weights=[weights.get(name, 1.0) for name in kept]
    )
    return fused, ListWeights(weights=weights, reason="; ".join(reasons) or None)


def _understood_weight(found: Understanding, weights: ranking.WeightChoice | None) -> float:
    """The understood list's fusion weight: the given choice's, else the mean of the
    active sets of the workspaces whose entities the question names (one indexed read)."""
    if weights is not None:
        return weights.understood
    if not found.groups:
        return UNDERSTOOD_WEIGHT
    active = weights_active(found.groups)
    chosen = [active.get(group, ranking.DEFAULT_CHOICE).understood for group in found.groups]
    return sum(chosen) / len(chosen)


def _query_vectors(embedding: Future[list[list[float]]]) -> list[list[float]]:
    """The query's vectors, or none when the embedder failed: search answers by text alone."""
    try:
        return embedding.result()
    except Exception as error:
        # A provider outage (its circuit open, retries spent) must not take search down;
        # the response says which half is missing. The class name only: no secrets.
        logger.warning("vector half skipped, the query embedding failed: %s", type(error).__name__)
        return []


_pools: dict[int, ThreadPoolExecutor] = {}


def _embedding_pool() -> ThreadPoolExecutor:
    """This process's threads for query embeddings (a forked worker makes its own)."""
    pid = os.getpid()
    if pid not in _pools:
        _pools[pid] = ThreadPoolExecutor(max_workers=4, thread_name_prefix="vera-query-embed")
    return _pools[pid]


def _candidates(
    query: Query, fused: dict[int, float], docs: dict[int, sql.Candidate], index: Index
) -> dict[int, ranking.CandidateFacts]:
    votes = index.votes(list(docs))
    return {
        claim_id: ranking.CandidateFacts(
            stage1=fused[claim_id],
            authority=doc.authority,
            verification=doc.verification,
            valid_from=doc.valid_from,
            invalidated=doc.status != VALID_NOW and query.as_of is None,
            up=votes.get(claim_id, (0, 0))[0],
            down=votes.get(claim_id, (0, 0))[1],
            confidence=doc.confidence,
        )
        for claim_id, doc in docs.items()
    }


def _stage3(
    query: Query,
    blended: list[tuple[int, float]],
    docs: dict[int, sql.Candidate],
    reranking: Reranking,
) -> tuple[list[tuple[int, float]], dict[int, float], Stage3]:
    """Re-score the top N with the cross-encoder; on failure keep stage 2's order."""
    head = [claim_id for claim_id, _ in blended[: reranking.top_n]]
    try:
        scores = reranking.reranker.score(query.text, [docs[c].text for c in head])
    except RerankerError as error:
        # A search still answers when the reranker is down: stage 2 is a complete ranking.
        logger.warning("stage 3 skipped, stage-2 order returned: %s", error)
        return blended, {}, Stage3.UNAVAILABLE
    ce = dict(zip(head, scores, strict=True))
    return ranking.rerank(blended, ce, w=reranking.weight), ce, Stage3.APPLIED


# A request's transaction already wraps a search; a savepoint would only add round trips.
@transaction.atomic(savepoint=False)
def search(
    *,
    query: Query,
    embedder: Embedders | None,
    now: dt.datetime,
    weights: ranking.WeightChoice | None = None,
    user_id: int | None = None,
    half_life_s: float = ranking.HALF_LIFE_S,
    reranking: Reranking | None = None,
    record: bool = True,
    fusion: Mapping[str, float] | None = None,
    index: Index = sql,
    pinned: Pinned | None = None,
    ontologies: OntologyReader = default_ontologies,
) -> Result:
    """Rank, cite and log: every returned hit's signal vector is stored for calibration.

    `weights` None (what entrypoints pass) blends each hit with its workspace's active
    set; a given choice blends every hit with it (evaluating a candidate set). With
    `record` False nothing is logged (golden-set evaluation must not become feedback
    samples) and the hits carry no hit id. `fusion` weighs stage 1's lists by name
    (`fulltext`, `vector`) in weighted RRF; a list it does not name counts 1.0.
    `index` and `pinned` search a sealed snapshot (`retrieval.services.snapshots`), and
    `ontologies` then reads the ontology it pinned.

    The steps are `_Run`'s, in order: the question read and its lists found (step 0
    and stage 1), fused and blended (stage 2), re-scored (stage 3), the top `k` logged.
    """
    run = _Run(
        embedder=embedder, now=now, weights=weights, user_id=user_id, half_life_s=half_life_s,
        reranking=reranking, record=record, fusion=fusion, index=index, pinned=pinned,
        ontologies=ontologies,
    )  # fmt: skip
    query, lists = run.candidates(query)
    blended = run.blend(query, lists)
    final, ce, stage3 = run.reranked(query, blended)
    query_id = uuid.uuid4()
    top = final[: query.k]
    hit_ids = run.logged(query, query_id, top, blended)
    return Result(
        query_id=query_id,
        hits=_hits(top, hit_ids, blended, lists.rankings, ce),
        stage3=stage3,
        timings=run.watch.ms,
        degraded=run.degraded(lists.rankings),
        weights=_weights_used(top, blended),
        understood=_understood_reported(lists, blended.understood_weight),
    )


@dataclass(frozen=True)
class _Blended:
    """Stage 2's ranking (claim id and blended score, best first), with what it was made
    of: each candidate's document, weight set and signals (the six, and `understood`),
    and the understood list's weight in the fusion."""

    ranked: list[tuple[int, float]]
    docs: dict[int, sql.Candidate]
    choice: dict[int, ranking.WeightChoice]
    signals: dict[int, dict[str, float]]
    understood_weight: float


@dataclass(frozen=True)
class _Run:
    """One search's settings (`search`'s arguments but the query, which step 0 may narrow
    to a stated time) and its stopwatch, read by each of its steps."""

    embedder: Embedders | None
    now: dt.datetime
    weights: ranking.WeightChoice | None
    user_id: int | None
    half_life_s: float
    reranking: Reranking | None
    record: bool
    fusion: Mapping[str, float] | None
    index: Index
    pinned: Pinned | None
    ontologies: OntologyReader
    watch: Stopwatch = field(default_factory=Stopwatch)

    def candidates(self, query: Query) -> tuple[Query, Lists]:
        """Step 0 and stage 1: the question read (`understand`), then its lists; the query
        as searched comes back with them.

        "as of March 2022" in the words, about an entity with a history then, narrows the
        search to that time (`understand` says why not otherwise, in `time_fallback`).
        """
        # Embedding starts first: understanding the question (Python) overlaps the model.
        started = embeddings_start(query, embedder=self.embedder, pinned=self.pinned)
        with self.watch.step("understand"):
            found = understand(query.text, ontologies=self.ontologies)
        stated = _stated_time(query, found)
        if stated is None:
            return query, self.lists(query, found, started)
        narrowed = replace(query, as_of=stated)
        lists = self.lists(narrowed, found, started)
        if any(lists.rankings.values()):
            return narrowed, lists
        # A time read from the words is a hint, not a wall: when nothing was valid then
        # (knowledge recorded since, or a year that is the topic), the question is
        # searched without it and `understood` says so. A caller's as_of stays exact.
        found = replace(found, time_fallback=_time_fallback(found))
        return query, self.lists(query, found, started)

    def lists(self, query: Query, found: Understanding, started: list[Pending]) -> Lists:
        """Stage 1 under the query's valid-time filter, with the embeddings `candidates`
        started (a second run, without the stated time, reuses them)."""
        return stage1_lists(
            query, embedder=self.embedder, watch=self.watch, index=self.index,
            pinned=self.pinned, understanding=found, started=started,
        )  # fmt: skip

    def blend(self, query: Query, lists: Lists) -> _Blended:
        """Stage 2: the lists fused (`fuse`), their candidates' documents read, each blended
        with its weight set from the six signals (`ranking.rank`)."""
        with self.watch.step("blend"):
            base = self.fusion_weights(lists.understanding)
            fused, _ = fuse(query, lists, embedder=self.embedder, base=base)
            docs = self.index.documents(list(fused), with_text=self.reranking is not None)
            choice = self.weight_choices(docs)
            ranked = ranking.rank(
                _candidates(query, fused, docs, self.index),
                weights=lambda claim_id: choice[claim_id].weights,
                now=self.now,
                half_life_s=self.half_life_s,
            )
        # The six signals, and whether the hit is what the question asked for (reported and
        # logged beside them, so the understood list's weight can be learnt from votes).
        matched = set(lists.rankings.get("understood", ()))
        signals = {
            claim_id: {**row_signals.as_dict(), "understood": float(claim_id in matched)}
            for claim_id, _, row_signals in ranked
        }
        return _Blended(
            ranked=[(claim_id, score) for claim_id, score, _ in ranked],
            docs=docs,
            choice=choice,
            signals=signals,
            understood_weight=base["understood"],
        )

    def fusion_weights(self, found: Understanding) -> dict[str, float]:
        """Stage 1's lists' weights by name for `fuse`: the understood list's
        (`_understood_weight`) unless `fusion` names it, and every weight `fusion` names."""
        return {"understood": _understood_weight(found, self.weights), **(self.fusion or {})}

    def weight_choices(self, docs: dict[int, sql.Candidate]) -> dict[int, ranking.WeightChoice]:
        """Each candidate's weight set: the given choice, else its workspace's active set
        (one read for every workspace among the candidates), else the built-in default."""
        choices = {} if self.weights else weights_active({d.group_id for d in docs.values()})
        return {
            claim_id: choices.get(doc.group_id, self.weights or ranking.DEFAULT_CHOICE)
            for claim_id, doc in docs.items()
        }

    def reranked(
        self, query: Query, blended: _Blended
    ) -> tuple[list[tuple[int, float]], dict[int, float], Stage3]:
        """Stage 3 when a reranker is configured and stage 2 found anything: the final
        order, the cross-encoder's scores by claim id, and what stage 3 did."""
        if self.reranking is None or not blended.ranked:
            return blended.ranked, {}, Stage3.OFF
        with self.watch.step("rerank"):
            return _stage3(query, blended.ranked, blended.docs, self.reranking)

    def logged(
        self,
        query: Query,
        query_id: uuid.UUID,
        top: list[tuple[int, float]],
        blended: _Blended,
    ) -> dict[int, int | None]:
        """Each returned hit's hit id: logged with its signals when the search is recorded
        (`_log`), None when it is not or the hit is read from a scope above the caller's."""
        hit_ids: dict[int, int | None] = dict.fromkeys((claim_id for claim_id, _ in top), None)
        if self.record:
            with self.watch.step("log"):
                hit_ids.update(
                    _log(query, query_id, top, blended.docs, blended.signals, blended.choice,
                         self.user_id)
                )  # fmt: skip
        return hit_ids

    def degraded(self, rankings: Mapping[str, list[int]]) -> tuple[str, ...]:
        """The stage-1 halves that could not run: "vector" when the search had query
        embedders (`pinned`, else `embedder`) and no vector list came of them."""
        wanted = bool(self.pinned) if self.pinned is not None else self.embedder is not None
        return ("vector",) if wanted and "vector" not in rankings else ()


def _stated_time(query: Query, found: Understanding) -> dt.datetime | None:
    """The time the question's words state, to search as of: only when the caller gave no
    `as_of` (which stays exact) and `understand` kept it (no `time_fallback`)."""
    if found.as_of is not None and query.as_of is None and not found.time_fallback:
        return found.as_of
    return None


def _time_fallback(found: Understanding) -> str:
    """Why the stated time was dropped (`understood.time_fallback`): nothing was valid then."""
    said = f" ({found.time_text!r})" if found.time_text else ""
    when = f"{found.as_of:%Y-%m-%d}" if found.as_of else "the time stated"
    return f"nothing was valid as of {when}{said}: searched without the time"


def _positions(rankings: Mapping[str, list[int]]) -> dict[str, dict[int, int]]:
    """Each claim's position (from 1) in each stage-1 list, by list name. Each model's
    vector list covers its own workspaces: one "vector" position per hit, from the first
    vector list that holds it."""
    positions: dict[str, dict[int, int]] = {}
    for name, ids in rankings.items():
        where = positions.setdefault("vector" if is_vector(name) else name, {})
        where.update({cid: i for i, cid in enumerate(ids, 1) if cid not in where})
    return positions


def _hits(
    top: list[tuple[int, float]],
    hit_ids: Mapping[int, int | None],
    blended: _Blended,
    rankings: Mapping[str, list[int]],
    ce: Mapping[int, float],
) -> list[Hit]:
    """The returned hits, best first, each with what ranked it: its signals, its stage-1
    positions, its cross-encoder score (when stage 3 read it) and its weight set's version."""
    positions = _positions(rankings)
    return [
        Hit(
            hit_id=hit_ids[claim_id],
            claim_id=claim_id,
            score=score,
            signals=blended.signals[claim_id],
            stage1={name: where.get(claim_id) for name, where in positions.items()},
            rerank=ce.get(claim_id),
            weight_version=blended.choice[claim_id].version,
        )
        for claim_id, score in top
    ]


def _weights_used(
    top: list[tuple[int, float]], blended: _Blended
) -> dict[str, tuple[int, int | None]]:
    """Per workspace with a returned hit, by group id: the version and id of the weight set
    that blended it (None for the built-in default)."""
    used = {blended.docs[cid].group_id: blended.choice[cid] for cid, _ in top}
    return {group: (c.version, c.set_id) for group, c in sorted(used.items())}


def _understood_reported(lists: Lists, weight: float) -> Understanding:
    """What the response says was understood: with the understood list's fusion weight
    when there was such a list (otherwise none: the weight weighed nothing)."""
    if "understood" in lists.rankings:
        return replace(lists.understanding, weight=weight)
    return lists.understanding


def _log(
    query: Query,
    query_id: uuid.UUID,
    final: list[tuple[int, float]],
    docs: dict[int, sql.Candidate],
    signals: dict[int, dict[str, float]],
    choice: dict[int, ranking.WeightChoice],
    user_id: int | None,
) -> dict[int, int]:
    """Store each returned hit with its signal vector and weight set (for calibration);
    {claim id: hit id}.

    Only hits of the groups the caller works in: a fact read from a scope above its own
    (published knowledge, read-only) is returned without a hit id, as a snapshot's is."""
    return sql.log_hits(
        query_id=query_id,
        query_text=query.text,
        user_id=user_id,
        at=timezone.now(),
        hits=[
            sql.Logged(
                group_id=docs[claim_id].group_id,
                claim_id=claim_id,
                rank=position,
                score=score,
                signals=signals[claim_id],
                weight_set_id=choice[claim_id].set_id,
                weight_version=choice[claim_id].version,
            )
            for position, (claim_id, score) in enumerate(final, start=1)
        ],
    )
