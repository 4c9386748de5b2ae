"""Context packs: the best cited facts for a question, packed into a token budget.

One use case for every entrypoint (REST `GET /api/v1/context`, the MCP server):
`context_pack` runs the search the REST search runs (live: the bound search, then
`search_result_cited`; of a sealed snapshot: `snapshot_search` and its cards), deeper
than a search's default k, and packs the cited hits with the pure assembler
(`retrieval.domain.context`). A pack served to a caller is kept (`ContextPack`), one
row per workspace of the caller's whose facts it holds; `pack_payload` is the JSON
every entrypoint returns.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from common.reads import read_connection
from curation.domain.highlight import PASSAGE_PREDICATE
from curation.models import Evidence
from retrieval.domain.context import (
    ASSEMBLER_VERSION,
    LIKE_VERSION,
    NEIGHBOUR_HITS,
    REPRODUCIBLE_VERSIONS,
    Pack,
    PackCitation,
    PackClaim,
    PackFact,
    best_claims,
    named_speakers,
    pack,
    pack_depth,
    pack_groups,
    pack_part,
    speakers_named_first,
    with_like,
    with_neighbours,
    with_unnamed_turns,
    without_names,
)
from retrieval.domain.query import Query
from retrieval.domain.results import Hit, Result
from retrieval.models import ContextPack, Snapshot, SnapshotDocument
from retrieval.ports import EmbedderCatalog, Reranking, Search, Tokenizer
from retrieval.selectors import CitedHit, CitedResult, search_result_cited
from retrieval.services.snapshots import (
    SnapshotRefused,
    snapshot_result_cited,
    snapshot_search,
)
from tenants import rls


@dataclass(frozen=True)
class Packing:
    """What a pack is searched and counted with (the composition root's adapters)."""

    search: Search
    tokenizer: Tokenizer
    catalog: EmbedderCatalog  # a snapshot's pinned query embedders come from it
    reranking: Reranking | None


@dataclass(frozen=True)
class ContextPackResult:
    """A served pack: the facts and text, the tokenizer that counted it, and the id it
    was kept under (None when not kept, or when none of its facts is of a workspace of
    the caller's, e.g. only an organisation's published facts it reads)."""

    pack: Pack
    query_text: str
    tokenizer: str
    pack_id: uuid.UUID | None = None
    snapshot_id: int | None = None


def context_pack(
    *,
    query: Query,
    token_budget: int,
    user_id: int | None,
    now: dt.datetime,
    snapshot_id: int | None = None,
    packing: Packing,
    keep: bool = True,
) -> ContextPackResult:
    """The pack for `query` (as of `query.as_of`, else `now`; a snapshot's: else its
    instant) within `token_budget` tokens, kept when `keep`.

    Of a snapshot: Snapshot.DoesNotExist when the caller sees none, SnapshotRefused when
    it cannot be searched or was sealed for another assembler version.
    """
    query = replace(query, k=pack_depth(token_budget), snapshot=snapshot_id)
    if snapshot_id is None:

        def live(asked: Query) -> list[PackFact]:
            result = packing.search(query=asked, now=now, user_id=user_id, record=False)
            return _live_facts(search_result_cited(result=result))

        at = query.as_of or now
        version = ASSEMBLER_VERSION
        facts = _read(query, live)
        facts = with_neighbours(facts, _neighbours(facts[:NEIGHBOUR_HITS], at), hits=NEIGHBOUR_HITS)
    else:
        snapshot = Snapshot.objects.get(pk=snapshot_id)  # RLS: another tenant's is not found
        snapshot_assembler_check(snapshot)

        def sealed(asked: Query) -> list[PackFact]:
            result = snapshot_search(
                snapshot=snapshot, query=asked, catalog=packing.catalog,
                reranking=packing.reranking,
            )  # fmt: skip
            return _snapshot_facts(
                snapshot, snapshot_result_cited(snapshot=snapshot, result=result)
            )

        version = snapshot.assembler_version or ASSEMBLER_VERSION
        facts = _read(query, sealed, second_reading=version >= LIKE_VERSION)
        at = query.as_of or snapshot.taken_at or now
    packed = pack(
        facts, token_budget=token_budget, at=at, count_tokens=packing.tokenizer.count,
        question=query.text, version=version,
    )  # fmt: skip
    served = ContextPackResult(
        pack=packed, query_text=query.text, tokenizer=packing.tokenizer.name,
        snapshot_id=snapshot_id,
    )  # fmt: skip
    return _kept(served, user_id) if keep else served


def _read(
    query: Query, search: Callable[[Query], list[PackFact]], *, second_reading: bool = True
) -> list[PackFact]:
    """The facts a pack reads for the query, best first: its search's, with the turns of
    a search without the speakers it names (`_speakers_unnamed`), reranked by a search
    more like the best LIKE_HITS of them (`with_like`: the question without the names,
    its vector moved towards theirs; not for a snapshot pinning an assembler before
    it), then the named speakers' turns first."""
    facts, asked = _speakers_unnamed(query, search)
    like = best_claims(speakers_named_first(facts, query.text)) if second_reading else ()
    if like:
        facts = with_like(facts, search(replace(query, text=asked, like=like)))[: query.k]
    return speakers_named_first(facts, query.text)


def _speakers_unnamed(
    query: Query, search: Callable[[Query], list[PackFact]]
) -> tuple[list[PackFact], str]:
    """The facts a pack reads for the query, best first: its search's; when the question
    names someone who speaks in them, its turns fused with those of a search of the
    question without their names (`pack_depth` of both, by reciprocal rank, the second
    weighing UNNAMED_WEIGHT), every other fact kept in its place.

    A name in a question about a conversation finds every turn that person said ("Melanie
    said: ..." is in each) and every turn said to them ("Thanks, Melanie!"), lexically and
    in the vector alike, and crowds out what the question asks about; the turns said by
    the person named still rank first after (`speakers_named_first`). The question as
    asked is kept as one of the two rankings: a name that is also what is asked about
    still counts. The question as searched the second time comes back with the facts
    (the question itself when it names no one).
    """
    facts = search(query)
    names = named_speakers(facts, query.text)
    if not names or not (asked := without_names(query.text, names)):
        return facts, query.text
    return with_unnamed_turns(facts, search(replace(query, text=asked)))[: query.k], asked


def snapshot_assembler_check(snapshot: Snapshot) -> None:
    """SnapshotRefused unless the snapshot pinned the assembler this deployment runs, or
    an earlier one it still packs exactly (`REPRODUCIBLE_VERSIONS`)."""
    pinned = snapshot.assembler_version
    if snapshot.status == Snapshot.Status.SEALED and not (
        pinned == ASSEMBLER_VERSION or pinned in REPRODUCIBLE_VERSIONS
    ):
        raise SnapshotRefused(
            f"snapshot {snapshot.pk} pinned context-pack assembler {pinned or 'none'}; this "
            f"deployment packs with {ASSEMBLER_VERSION} and cannot reproduce its packs"
        )


def _kept(served: ContextPackResult, user_id: int | None) -> ContextPackResult:
    """Keep each writable workspace's part of the pack under one new pack id (facts of
    groups the caller only reads, above its own, are not kept, as their hits are not)."""
    writable = set(rls.current_group_ids())
    whole = served.pack
    pack_id = uuid.uuid4()
    rows = [
        ContextPack(
            group_id=group_id,
            pack_id=pack_id,
            query_text=served.query_text,
            as_of=whole.at,
            snapshot_id=served.snapshot_id,
            assembler_version=whole.version,
            tokenizer=served.tokenizer,
            token_budget=whole.token_budget,
            tokens=whole.tokens,
            claim_ids=part.claim_ids,
            episode_ids=part.episode_ids,
            text=part.text,
            user_id=user_id,
        )
        for group_id in pack_groups(whole)
        if group_id in writable and (part := pack_part(whole, group_id)).facts
    ]
    if not rows:
        return served
    ContextPack.objects.bulk_create(rows)
    return replace(served, pack_id=pack_id)


def _fact(
    hit: CitedHit, claims: tuple[PackClaim, ...], groups: dict[tuple[str, str], str]
) -> PackFact:
    return PackFact(
        fact=hit.fact, subject=hit.subject, predicate=hit.predicate,
        object_text=hit.object_text, valid_from=hit.valid_from, valid_to=hit.valid_to,
        tier=hit.tier, status=hit.status, claims=claims,
        citations=tuple(
            PackCitation(
                c.source, c.episode, c.url, c.snippet, groups.get((c.source, c.episode), "")
            )
            for c in hit.citations
        ),
    )  # fmt: skip


def _live_facts(cited: CitedResult) -> list[PackFact]:
    """The cited hits as the assembler reads them, each claim and citation with its
    workspace (a hit may fold in the same fact from other scopes) and episodes."""
    ids = [cid for hit in cited.hits for cid in (hit.claim_id, *hit.also_claim_ids)]
    evidence: dict[int, list[tuple[str, str, str, int]]] = defaultdict(list)
    rows = (
        Evidence.objects.filter(claim_id__in=ids)
        .order_by("pk")
        .values_list(
            "claim_id", "group_id", "episode__source__name", "episode__external_id", "episode_id"
        )
    )
    for claim_id, group_id, source, external_id, episode_id in rows:
        evidence[claim_id].append((group_id, source, external_id, episode_id))
    facts = []
    for hit in cited.hits:
        claims, groups = [], {}
        for cid in (hit.claim_id, *hit.also_claim_ids):
            quoted = evidence.get(cid, [])
            group = hit.group_id if cid == hit.claim_id else (quoted[0][0] if quoted else "")
            claims.append(PackClaim(cid, group, tuple(sorted({e[3] for e in quoted}))))
            groups.update({(source, external): g for g, source, external, _ in quoted})
        facts.append(_fact(hit, tuple(claims), groups))
    return facts


# The passages next to each given passage claim in the episodes it is quoted from: the
# nearest before and after it, among the passages published there (RLS: the caller's).
_NEIGHBOURS_SQL = f"""
    SELECT h.claim_id, n.claim_id
    FROM curation_evidence h
    CROSS JOIN LATERAL (
        (SELECT e.claim_id, e.start FROM curation_evidence e
         JOIN curation_claim c ON c.id = e.claim_id
         WHERE e.episode_id = h.episode_id AND e.start < h.start
           AND c.predicate = '{PASSAGE_PREDICATE}' AND c.status = 'published'
         ORDER BY e.start DESC LIMIT 1)
        UNION ALL
        (SELECT e.claim_id, e.start FROM curation_evidence e
         JOIN curation_claim c ON c.id = e.claim_id
         WHERE e.episode_id = h.episode_id AND e.start > h.start
           AND c.predicate = '{PASSAGE_PREDICATE}' AND c.status = 'published'
         ORDER BY e.start LIMIT 1)
    ) n
    WHERE h.claim_id = ANY(%s) AND h.start IS NOT NULL
    ORDER BY h.claim_id, n.start
"""  # noqa: S608 - a constant, no input


def _neighbours(hits: Sequence[PackFact], at: dt.datetime) -> dict[int, list[PackFact]]:
    """For each hit that is a passage, the passages before and after it in its document
    that hold at `at` (its context), keyed by the hit's claim."""
    ids = [fact.claims[0].claim_id for fact in hits if fact.predicate == PASSAGE_PREDICATE]
    if not ids:
        return {}
    with read_connection().cursor() as cursor:
        cursor.execute(_NEIGHBOURS_SQL, [ids])
        pairs = [(hit, near) for hit, near in cursor.fetchall() if near not in ids]
    if not pairs:
        return {}
    found = Result(query_id=uuid.uuid4(), hits=[
        Hit(hit_id=None, claim_id=near, score=0.0, signals={}) for _, near in pairs
    ])  # fmt: skip
    facts = {f.claims[0].claim_id: f for f in _live_facts(search_result_cited(result=found))}
    out: dict[int, list[PackFact]] = defaultdict(list)
    for hit, near in pairs:
        if (fact := facts.get(near)) is not None and fact.current_at(at):
            out[hit].append(fact)
    return dict(out)


def _snapshot_facts(snapshot: Snapshot, cited: CitedResult) -> list[PackFact]:
    """A snapshot's hits (one workspace's), with the episodes its documents quote."""
    episodes = dict(
        SnapshotDocument.objects.filter(
            snapshot=snapshot, claim_id__in=[hit.claim_id for hit in cited.hits]
        ).values_list("claim_id", "episode_ids")
    )
    group = snapshot.group_id
    return [
        _fact(
            hit,
            (PackClaim(hit.claim_id, group, tuple(episodes.get(hit.claim_id, ()))),),
            {(c.source, c.episode): group for c in hit.citations},
        )
        for hit in cited.hits
    ]


def _fact_payload(fact: PackFact) -> dict[str, Any]:
    return {
        "claim_ids": [claim.claim_id for claim in fact.claims],
        "fact": fact.fact,
        "subject": fact.subject,
        "predicate": fact.predicate,
        "object": fact.object_text,
        "valid_from": fact.valid_from.isoformat(),
        "valid_to": fact.valid_to.isoformat() if fact.valid_to is not None else None,
        "tier": fact.tier,
        "status": fact.status,
        "beside": fact.beside,
        "citations": [
            {"source": c.source, "episode": c.episode, "url": c.url, "snippet": c.snippet}
            for c in fact.citations
        ],
    }


def pack_payload(served: ContextPackResult) -> dict[str, Any]:
    """The pack as every entrypoint returns it (REST, MCP): JSON-ready."""
    whole = served.pack
    return {
        "pack_id": str(served.pack_id) if served.pack_id is not None else None,
        "assembler_version": whole.version,
        "token_budget": whole.token_budget,
        "tokens": whole.tokens,
        "tokenizer": served.tokenizer,
        "as_of": whole.at.isoformat(),
        "snapshot": served.snapshot_id,
        "current": [_fact_payload(fact) for fact in whole.current],
        "history": [_fact_payload(fact) for fact in whole.history],
        "text": whole.text,
    }


def context_packs_expire(*, group_id: str, before: dt.datetime) -> int:
    """Delete the workspace's served packs kept since before `before` (its retention);
    how many. Packs are what a caller was given, kept for feedback: nothing is derived
    from them, so nothing else changes."""
    deleted, _ = ContextPack.objects.filter(group_id=group_id, created_at__lt=before).delete()
    return deleted
