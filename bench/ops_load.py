"""Load an ops corpus (bench/ops_corpus.py) into a workspace with the ORM, then index it.

Bulk inserts run as the application role inside `rls.tenant_context`, a few thousand
claims per transaction; documents enter the search index only through `index_claims`.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import itertools
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import models
from django.utils import timezone

from bench.common import analyze, bench_workspace, db_name, lift_rate_limits, timed
from bench.ops_corpus import SOURCES, Corpus, Fact, episode_url
from curation.domain.names import normalize_name
from curation.domain.tiers import AUTHORITY, ClaimStatus, Tier, Verification
from curation.models import Claim, Entity, EntityAlias, Episode, EpisodeStatus, Evidence, Source
from curation.ports import Embedder
from curation.usecases import claims_load
from retrieval.models import GroupEmbedding, SearchDocument, Snapshot
from retrieval.usecases import INDEXED_STATUSES, index_claims, snapshot_build, snapshot_take
from tenants import rls
from tenants.domain.access import Principal
from tenants.domain.scopes import Role
from tenants.models import Scope
from tenants.selectors import principal_for_user, principal_system
from tenants.usecases import api_key_issue, membership_grant

WORKSPACE = "Latency WS"
CHUNK = 4000
INDEX_BATCH = 512


def _bulk(model: type[models.Model], rows: Iterable[models.Model]) -> list[Any]:
    created: list[Any] = []
    for batch in itertools.batched(rows, CHUNK):
        created += model._default_manager.bulk_create(batch)
    return created


def _crc(text: str) -> int:
    return zlib.crc32(text.encode())


class _Loader:
    """Entities (with their names as aliases, when asked), sources and episodes made once;
    claims and evidence chunk by chunk."""

    def __init__(
        self, *, corpus: Corpus, group_id: str, principal: Principal, aliases: bool = False
    ) -> None:
        self.group_id, self.principal = group_id, principal
        with rls.tenant_context(principal):
            names = corpus.vocabulary.entities().items()
            entities = _bulk(
                Entity,
                (Entity(group_id=group_id, canonical_name=n, entity_type=k) for n, k in names),
            )
            self.entity = {row.canonical_name: row.pk for row in entities}
            if aliases:  # what entity resolution stores for a new entity: its own name
                EntityAlias.objects.bulk_create(
                    (
                        EntityAlias(group_id=group_id, entity_id=pk, alias=name,
                                    alias_norm=normalize_name(name), method="new")
                        for name, pk in self.entity.items()
                    ),
                    batch_size=CHUNK,
                    ignore_conflicts=True,  # two names of one normal form: the first keeps it
                )  # fmt: skip
            self.source = {name: self._source(name, kind, tier) for name, kind, tier in SOURCES}
            now = timezone.now()
            episodes = _bulk(Episode, (
                self._episode(source, service, now)
                for source in self.source.values()
                for service in corpus.services
            ))  # fmt: skip
        self.episode = {(e.source.name, e.title): e.pk for e in episodes}

    def _source(self, name: str, kind: str, tier: int) -> Source:
        return Source.objects.create(
            group_id=self.group_id, origin_group_id=self.group_id, name=name, kind=kind,
            config={"root": "/nonexistent"}, trust_tier=tier, enabled=False,
        )  # fmt: skip

    def _episode(self, source: Source, service: str, now: dt.datetime) -> Episode:
        external_id, url = episode_url(source.name, service)
        return Episode(
            group_id=self.group_id, source=source, external_id=external_id, url=url,
            title=service, content_hash=hashlib.sha256(external_id.encode()).hexdigest(),
            mime="text/markdown", size=2000 + _crc(external_id) % 20000, fetched_at=now,
            status=EpisodeStatus.PROCESSED, claims_count=0,
        )  # fmt: skip

    def _claim(self, fact: Fact, *, newer: Claim | None = None) -> Claim:
        source = self.source[fact.source]
        target = self.entity[fact.object_entity] if fact.object_entity else None
        literal = fact.object_literal
        key = f"e:{target}" if target else "l:" + " ".join(str(literal).lower().split())[:290]
        return Claim(
            group_id=self.group_id, source=source, subject_id=self.entity[fact.subject],
            predicate=fact.predicate, object_entity_id=target,
            object_literal=None if target else literal, object_key=key, fact_text=fact.fact,
            confidence=0.6 + _crc(fact.fact) % 40 / 100, verification=Verification.AUTO,
            tier=source.trust_tier, authority=AUTHORITY[Tier(source.trust_tier)],
            status=ClaimStatus.SUPERSEDED if newer else ClaimStatus.PUBLISHED,
            valid_from=fact.valid_from, valid_to=newer.valid_from if newer else None,
            superseded_by=newer, version=2 if newer else 1,
        )  # fmt: skip

    def _evidence(self, fact: Fact, claim: Claim) -> list[Evidence]:
        start = _crc(fact.snippet) % 1500
        cited = [(fact.source, fact.snippet, start)]
        if fact.source != "service-catalog" and _crc(fact.fact) % 10 == 0:
            cited.append(("service-catalog", fact.fact, start // 3))  # also said elsewhere
        return [
            Evidence(
                group_id=self.group_id,
                claim=claim,
                episode_id=self.episode[(source, fact.subject)],
                start=offset,
                end=offset + len(snippet),
                snippet=snippet,
            )
            for source, snippet, offset in cited
        ]

    def chunk(self, facts: list[Fact]) -> list[int]:
        """Insert these facts (and their superseded revisions); returns every new claim id."""
        with rls.tenant_context(self.principal):
            current = claims_load([self._claim(f) for f in facts])
            revised = [(f.previous, c) for f, c in zip(facts, current, strict=True) if f.previous]
            older = claims_load([self._claim(p, newer=c) for p, c in revised])
            cited = [
                *zip(facts, current, strict=True),
                *zip((previous for previous, _ in revised), older, strict=True),
            ]
            Evidence.objects.bulk_create(
                [row for fact, claim in cited for row in self._evidence(fact, claim)]
            )
        return [claim.pk for claim in (*current, *older)]


def load(
    *,
    corpus: Corpus,
    name: str = WORKSPACE,
    aliases: bool = False,
    each_chunk: Callable[[Scope, list[int]], object] | None = None,
) -> tuple[Scope, list[int]]:
    """A new workspace `name` (in the organisation "Latency Org") holding the corpus;
    returns it and the claim ids.

    With `aliases` every entity has its name as an alias, as entity resolution gives a
    new one (question understanding finds the entities a question names by their
    aliases: without, it finds none). `each_chunk` is told each chunk's new claim ids as
    soon as they are committed (a bulk ingest indexing as it goes).
    """
    workspace, principal = bench_workspace("Latency Org", name)
    loader = _Loader(
        corpus=corpus, group_id=workspace.group_id, principal=principal, aliases=aliases
    )
    ids: list[int] = []
    for start in range(0, corpus.size, CHUNK):
        stop = min(start + CHUNK, corpus.size)
        written = loader.chunk([corpus.fact(i) for i in range(start, stop)])
        ids += written
        if each_chunk is not None:
            each_chunk(workspace, written)
    return workspace, ids


def index_all(ids: list[int], *, workspace: Scope, embedder: Embedder) -> int:
    """Index the claims in batches through `index_claims`, printing progress (the rate so
    far, and over the last 10,000 or more: whether it falls as the index grows); returns
    the count."""
    principal = principal_system("bench", group_ids=[workspace.group_id])
    done, started, reported, last = 0, time.perf_counter(), 0, time.perf_counter()
    for start in range(0, len(ids), INDEX_BATCH):
        with rls.tenant_context(principal):
            done += index_claims(claim_ids=ids[start : start + INDEX_BATCH], embedder=embedder)
        if done - reported >= 10_000:
            now = time.perf_counter()
            rate, recent = done / (now - started), (done - reported) / (now - last)
            reported, last = done, now
            print(
                f"  indexed {done}/{len(ids)} ({rate:.0f} documents/s; lately {recent:.0f}/s)",
                flush=True,
            )
    return done


def _index_rest(workspace: Scope, embedder: Embedder) -> None:
    """Index what an interrupted load left without an index document (--reuse)."""
    principal = principal_system("bench", group_ids=[workspace.group_id])
    with rls.tenant_context(principal):
        missing = Claim.objects.filter(status__in=INDEXED_STATUSES, search_document__isnull=True)
        ids = list(missing.order_by("pk").values_list("pk", flat=True))
    print(f"resume           indexing the {len(ids)} claims a load left unindexed", flush=True)
    with timed() as took:
        done = index_all(ids, workspace=workspace, embedder=_loading_embedder(embedder))
    print(
        f"index            {done} documents in {took[0]:.1f} s ({done / took[0]:.0f} documents/s)"
    )
    analyze()


@dataclass(frozen=True)
class LoadedState:
    """What a workspace loaded earlier holds."""

    published: int
    unindexed: int  # published or superseded claims without an index document
    model: str | None
    dimension: int | None


def loaded_state(*, workspace: Scope) -> LoadedState:
    """Published claims, missing index documents and the embedding pin of a workspace."""
    principal = principal_system("bench", group_ids=[workspace.group_id])
    with rls.tenant_context(principal):
        published = Claim.objects.filter(status=ClaimStatus.PUBLISHED).count()
        indexed = Claim.objects.filter(status__in=INDEXED_STATUSES).count()
        documents = SearchDocument.objects.count()
        pin = GroupEmbedding.objects.filter(group_id=workspace.group_id).first()
    return LoadedState(
        published=published,
        unindexed=indexed - documents,
        model=pin.model if pin else None,
        dimension=pin.dimension if pin else None,
    )


def sealed_snapshot(*, reuse: bool) -> int:
    """A sealed knowledge snapshot of the loaded workspace, holding every index document:
    the newest such one with `reuse`, else one taken and built now (timed)."""
    workspace = Scope.objects.get(name=WORKSPACE)
    principal = principal_system("bench", group_ids=[workspace.group_id])
    with rls.tenant_context(principal):
        documents = SearchDocument.objects.count()
        if reuse:
            for snapshot in Snapshot.objects.filter(status=Snapshot.Status.SEALED).order_by("-pk"):
                if snapshot.counts.get("documents") == documents and snapshot.pins.get(
                    "postings_per_term"
                ):
                    return snapshot.pk
        taken = snapshot_take(actor=principal, group_id=workspace.group_id, name="bench")
    started = time.perf_counter()
    built = snapshot_build(taken.pk, actor=principal)
    if built is None:
        raise SystemExit(f"snapshot {taken.pk} was not built")
    analyze()  # the snapshot's rows, for the planner, as autovacuum would a little later
    print(
        f"snapshot         {built.pk} built and sealed in {time.perf_counter() - started:.0f} s: "
        f"{built.counts}",
        flush=True,
    )
    return built.pk


def _loading_embedder(configured: Embedder) -> Embedder:
    """MiniLM on every core for the bulk load (batches of 32 beat 64 here); else the configured one.

    Uncached on purpose: the documents' vectors would fill Redis and no query reads them.
    """
    if settings.VERA_EMBEDDER__PROVIDER != "minilm":
        return configured
    from retrieval.adapters.embedders import MiniLMEmbedder

    return MiniLMEmbedder(intra_op_threads=None, batch_size=32)


def ensure_loaded(*, claims: int, reuse: bool, embedder: Embedder, aliases: bool = False) -> Corpus:
    """The corpus in the bench database: loaded and indexed now (with the entities' names
    as aliases when asked: `load`), or found loaded (--reuse; an index an interrupted run
    left unfinished is finished first)."""
    workspace = Scope.objects.filter(name=WORKSPACE).first()
    if reuse and workspace is not None:
        state = loaded_state(workspace=workspace)
        if (
            state.published == claims
            and state.unindexed > 0
            and state.model in (None, embedder.model)
        ):
            _index_rest(workspace, embedder)
            state = loaded_state(workspace=workspace)
        wanted = (claims, 0, embedder.model, embedder.dimension)
        if (state.published, state.unindexed, state.model, state.dimension) != wanted:
            raise SystemExit(
                f"--reuse: {db_name()} holds {state}, not {claims} published claims indexed "
                f"with {embedder.model} ({embedder.dimension}); run without --reuse to rebuild it"
            )
        print(f"reuse            {state.published} published claims in {db_name()}")
        return Corpus(size=claims, now=timezone.now())
    corpus = Corpus(size=claims, now=timezone.now())
    with timed() as took:
        workspace, ids = load(corpus=corpus, aliases=aliases)
    print(
        f"load             {len(ids)} claims ({claims} published) in {took[0]:.1f} s "
        f"({len(ids) / took[0]:.0f} claims/s)",
        flush=True,
    )
    loading = _loading_embedder(embedder)
    with timed() as took:
        done = index_all(ids, workspace=workspace, embedder=loading)
    rate = done / took[0]
    print(f"index            {done} documents in {took[0]:.1f} s ({rate:.0f} documents/s)")
    with timed() as took:
        analyze()
    print(f"analyze          {took[0]:.1f} s", flush=True)
    return corpus


def viewer_key(name: str = WORKSPACE, *, people_prefix: str = "latency") -> str:
    """A fresh API key of a viewer of the workspace `name`, issued by its admin through the
    service (the two people named with `people_prefix`, members of that workspace alone)."""
    users = get_user_model().objects
    workspace = Scope.objects.get(name=name)
    people = {}
    named = ((f"{people_prefix}-admin", Role.ADMIN), (f"{people_prefix}-viewer", Role.VIEWER))
    for username, role in named:
        user = users.filter(username=username).first() or users.create_user(username=username)
        membership_grant(user_id=user.pk, scope_id=workspace.pk, role=role)
        people[role] = user
    actor = principal_for_user(people[Role.ADMIN].pk, label="bench")
    with rls.tenant_context(actor):
        issued = api_key_issue(
            actor=actor, owner_id=people[Role.VIEWER].pk, scope_id=workspace.pk,
            name=f"latency-{time.time_ns()}", role_ceiling=Role.VIEWER,
        )  # fmt: skip
    lift_rate_limits(workspace.pk)
    return issued.plaintext
