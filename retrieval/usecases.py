"""retrieval's use cases with their adapters bound: what every entrypoint calls.

The REST API, the portal, the admin, tasks, commands, the MCP server and the
benchmarks call these functions; none of them looks up a provider. The embedders,
reranker, search pipeline, tokenizer, usage ledger (retrieval's) and the graph and
object store (curation's) come from the composition root's providers in this one
module.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

from django.utils import timezone

from curation.models import Tombstone
from retrieval import bootstrap
from retrieval.domain.context import ContextRequest
from retrieval.domain.evaluation import Floors
from retrieval.domain.query import Query
from retrieval.models import EvaluationRun, Snapshot
from retrieval.ports import EmbedderCatalog, Search
from retrieval.selectors import CitedResult, search_result_cited
from retrieval.services import embedding, erasure, evaluation, index, snapshots, usage
from retrieval.services.context import ContextPackResult, Packing
from retrieval.services.context import context_pack as _context_pack
from tenants import rls
from tenants import selectors as tenant_selectors
from tenants.domain.access import Principal
from tenants.selectors import principal_system

# --- search and context ------------------------------------------------------------------


class ScopeNotVisible(LookupError):
    """The scope a request names is not one the principal reads: a 404, never data."""

    def __init__(self, scope: str) -> None:
        super().__init__(f"no such scope visible to the caller: {scope}")
        self.scope = scope


@dataclass(frozen=True)
class Searched:
    """A search as every entrypoint renders it: the cited hits, the principal that was
    searched for (narrowed to the query's scope, if it named one) and the sealed
    snapshot it read (None: the live index)."""

    result: CitedResult
    within: Principal
    snapshot: Snapshot | None = None


@contextmanager
def _within(principal: Principal, scope: str | None) -> Iterator[Principal]:
    """The principal's tenancy, narrowed to `scope` (and what is under it) when one is
    named: row-level security shows exactly what the narrowed principal reads.
    ScopeNotVisible when it has no role there and does not read it."""
    acting = principal
    if scope is not None:
        narrowed = tenant_selectors.principal_within(principal, scope)
        if narrowed is None:
            raise ScopeNotVisible(scope)
        acting = narrowed
    with rls.tenant_context(acting):
        yield acting


def search(principal: Principal, query: Query, *, now: dt.datetime | None = None) -> Searched:
    """The search every entrypoint runs (REST, the portal, MCP): narrowed to the query's
    scope, of the live index (the configured embedders and reranker, the hits logged for
    feedback and the stage timings exported) or of the sealed snapshot it names (with the
    models it pinned), and cited.

    ScopeNotVisible for a scope out of reach; Snapshot.DoesNotExist for a snapshot the
    principal does not see; SnapshotRefused (says why) for one that cannot be searched.
    """
    with _within(principal, query.scope) as within:
        if query.snapshot is not None:
            snapshot, cited = _snapshot_search(query)
            return Searched(cited, within, snapshot)
        result = _live_search()(query=query, now=now or timezone.now(), user_id=principal.user_id)
        started = time.perf_counter()
        cited = search_result_cited(result=result)
        cite_ms = (time.perf_counter() - started) * 1000
        return Searched(replace(cited, timings={**cited.timings, "cite": cite_ms}), within)


def _live_search() -> Search:
    """The pipeline's search with the configured embedders, reranker and fusion bound,
    its stage timings exported (`vera.wiring.RetrievalProviders.search`)."""
    return bootstrap.providers().search()


def _snapshot_search(query: Query) -> tuple[Snapshot, CitedResult]:
    """The query against the sealed snapshot it names, with the models it pinned.
    Snapshot.DoesNotExist unseen; SnapshotRefused says why it cannot be searched."""
    providers = bootstrap.providers()
    return snapshots.snapshot_search_cited(
        snapshot_id=query.snapshot or 0, query=query, catalog=providers.embedders(),
        reranking=providers.reranking(),
    )  # fmt: skip


def _packing() -> Packing:
    providers = bootstrap.providers()
    return Packing(
        search=providers.search(), tokenizer=providers.tokenizer(),
        catalog=providers.embedders(), reranking=providers.reranking(),
    )  # fmt: skip


def context_pack(
    principal: Principal, wanted: ContextRequest, *, now: dt.datetime | None = None
) -> ContextPackResult:
    """The best cited facts for the question within the token budget, narrowed to its
    scope, from the live index or the sealed snapshot it names (REST and MCP alike); the
    pack served is kept for feedback.

    ScopeNotVisible, Snapshot.DoesNotExist and SnapshotRefused as for `search`.
    """
    with _within(principal, wanted.query.scope):
        return _context_pack(
            query=wanted.query, token_budget=wanted.token_budget, user_id=principal.user_id,
            now=now or timezone.now(), snapshot_id=wanted.query.snapshot, packing=_packing(),
        )  # fmt: skip


def evaluation_run(
    *,
    actor: Principal,
    group_id: str,
    now: dt.datetime,
    trigger: str,
    floors: Floors | None = None,
    weight_set_id: int | None = None,
    run_key: str = "",
) -> EvaluationRun:
    """A workspace's golden set through the real search (the nightly job, the portal's
    Quality page, `eval_golden`, the calibration's candidate check)."""
    return evaluation.evaluation_run(
        actor=actor, group_id=group_id, search=bootstrap.providers().search(), now=now,
        trigger=trigger, floors=floors, weight_set_id=weight_set_id, run_key=run_key,
    )  # fmt: skip


# --- embedding models and the index ------------------------------------------------------


def offered_models() -> EmbedderCatalog:
    """The embedding models workspaces may be indexed with (forms and listings show
    their names; the use cases below take a model by its name)."""
    return bootstrap.providers().embedders()


def embedding_switch(
    *, actor: Principal, group_id: str, provider: str, reason: str
) -> embedding.Switch:
    """Move a workspace to another offered model (its documents re-embedded by the
    catch-up job, or by `index_catch_up` here)."""
    return embedding.embedding_switch(
        actor=actor, group_id=group_id, provider=provider, catalog=offered_models(),
        reason=reason,
    )  # fmt: skip


def embedding_companion(
    *, actor: Principal, group_id: str, provider: str | None, reason: str
) -> embedding.Companion:
    """Search a workspace with a second offered model too (None: no more)."""
    return embedding.embedding_companion(
        actor=actor, group_id=group_id, provider=provider, catalog=offered_models(),
        reason=reason,
    )  # fmt: skip


def index_catch_up(*, group_id: str) -> int:
    """Re-embed a bounded batch of the workspace's documents still on a previous model
    (and give its companion's vectors to those without); how many were done."""
    return index.index_catch_up(group_id=group_id, catalog=offered_models())


def index_rebuild(*, on_progress: Callable[[int, int], None] | None = None) -> int:
    """Re-index every claim visible to the tenant context, each workspace by its pin."""
    return index.index_rebuild(embedder=offered_models(), on_progress=on_progress)


def snapshot_build(snapshot_id: int, *, actor: Principal) -> Snapshot | None:
    """Copy and seal a requested snapshot with today's pins (outside any transaction)."""
    providers = bootstrap.providers()
    pinning = snapshots.Pinning(
        catalog=providers.embedders(), reranking=providers.reranking(), fusion=providers.fusion()
    )
    return snapshots.snapshot_build(snapshot_id, actor=actor, pinning=pinning)


def provider_usage_flush() -> int:
    """Move every process's metered provider usage from the ledger into Postgres."""
    return usage.provider_usage_flush(ledger=bootstrap.providers().usage_ledger())


# --- erasure -----------------------------------------------------------------------------


def erase(*, actor: Principal, kind: str, target_id: int, reason: str, confirm: bool) -> Tombstone:
    """Erase an episode or a source (admins; see `retrieval.services.erasure.erase`)."""
    return erasure.erase(
        actor=actor, kind=kind, target_id=target_id, reason=reason, confirm=confirm,
        catalog=offered_models(),
    )  # fmt: skip


def erasure_cleanup_at_once(tombstone_id: int, group_id: str) -> None:
    """After the erasure committed: the graph, object store and caches cleaned now, under
    the tombstone's group alone; when a store refuses, the queued job stays for the worker."""
    providers = bootstrap.providers()
    with rls.tenant_context(principal_system("erasure", group_ids=[group_id])):
        tombstone = Tombstone.objects.get(pk=tombstone_id)
        erasure.erasure_cleanup_now(
            tombstone, graph=providers.graph(), store=providers.object_store(),
            catalog=offered_models(),
        )  # fmt: skip


def erasure_verify(tombstone: Tombstone) -> erasure.Residue:
    """Scan every store for anything of the erased content (call in its group's context)."""
    providers = bootstrap.providers()
    return erasure.erasure_scan(
        tombstone, graph=providers.graph(), store=providers.object_store(),
        catalog=offered_models(),
    )  # fmt: skip
