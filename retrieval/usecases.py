"""retrieval's use cases with their adapters bound: what every entrypoint calls.

The REST API, the portal, the admin, tasks, commands, the MCP server and the
benchmarks call these functions; none of them looks up a provider. The embedders,
reranker, search pipeline, tokenizer, usage ledger (retrieval's) and the graph and
object store (curation's) come from the composition root's providers in this one
module. The refusals the entrypoints catch (SnapshotRefused, NeedsConfirmation, ...)
and the helpers they render with (`pack_payload`, `server_timing`) are re-exported
here: an entrypoint imports no service of retrieval's.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from django.db.models import QuerySet
from django.utils import timezone

from curation.models import Tombstone
from curation.ports import Embedder
from retrieval import bootstrap
from retrieval.domain.calibration import MIN_SAMPLES_PER_CLASS
from retrieval.domain.context import ContextRequest
from retrieval.domain.evaluation import Floors
from retrieval.domain.query import Query
from retrieval.domain.ranking import Weights
from retrieval.domain.results import Result
from retrieval.domain.word_learning import MIN_SUPPORT
from retrieval.models import (
    CalibrationRun,
    EvaluationRun,
    Feedback,
    SearchDocument,
    Snapshot,
    WeightSet,
    WordSuggestion,
)
from retrieval.ports import EmbedderCatalog, Search, Tokenizer
from retrieval.selectors import CitedResult, search_result_cited
from retrieval.services import (
    calibration,
    context,
    embedding,
    erasure,
    evaluation,
    feedback,
    index,
    snapshots,
    usage,
    weights,
    word_learning,
)
from retrieval.services.calibration import RunInProgress as RunInProgress
from retrieval.services.context import ContextPackResult
from retrieval.services.context import context_pack as _context_pack
from retrieval.services.context import pack_payload as pack_payload
from retrieval.services.embedding import SwitchRefused as SwitchRefused
from retrieval.services.erasure import ErasureRefused as ErasureRefused
from retrieval.services.evaluation import InvalidGolden as InvalidGolden
from retrieval.services.index import INDEXED_STATUSES as INDEXED_STATUSES
from retrieval.services.search import server_timing as server_timing
from retrieval.services.snapshots import SNAPSHOT_ADMINS_ONLY as SNAPSHOT_ADMINS_ONLY
from retrieval.services.snapshots import SnapshotRefused as SnapshotRefused
from retrieval.services.weights import NeedsConfirmation as NeedsConfirmation
from retrieval.services.weights import weight_set_create as _weight_set_create
from retrieval.services.weights import weights_of as weights_of
from retrieval.services.word_learning import SuggestionDecided as SuggestionDecided
from tenants import replicas, rls
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
    models it pinned), and cited. Read on a hot standby when one may serve the caller
    (tenants.replicas), else on the primary.

    ScopeNotVisible for a scope out of reach; Snapshot.DoesNotExist for a snapshot the
    principal does not see; SnapshotRefused (says why) for one that cannot be searched.
    """
    with _within(principal, query.scope) as within:
        return replicas.read_only(within, lambda: _search(principal, within, query, now))


def _search(
    principal: Principal, within: Principal, query: Query, now: dt.datetime | None
) -> Searched:
    if query.snapshot is not None:
        snapshot, cited = _snapshot_search(query)
        return Searched(cited, within, snapshot)
    # The pipeline with the installed adapters (`retrieval.bootstrap.search`).
    result = bootstrap.search()(query=query, now=now or timezone.now(), user_id=principal.user_id)
    started = time.perf_counter()
    cited = search_result_cited(result=result)
    cite_ms = (time.perf_counter() - started) * 1000
    return Searched(replace(cited, timings={**cited.timings, "cite": cite_ms}), within)


def _snapshot_search(query: Query) -> tuple[Snapshot, CitedResult]:
    """The query against the sealed snapshot it names, with the models it pinned.
    Snapshot.DoesNotExist unseen; SnapshotRefused says why it cannot be searched."""
    providers = bootstrap.providers()
    return snapshots.snapshot_search_cited(
        snapshot_id=query.snapshot or 0, query=query, catalog=providers.embedders(),
        reranking=providers.reranking(),
    )  # fmt: skip


def context_pack(
    principal: Principal,
    wanted: ContextRequest,
    *,
    now: dt.datetime | None = None,
    keep: bool = True,
) -> ContextPackResult:
    """The best cited facts for the question within the token budget, narrowed to its
    scope, from the live index or the sealed snapshot it names (REST and MCP alike); the
    pack served is kept for feedback (not with `keep` False: a benchmark's packs). Read
    on a hot standby when one may serve the caller, as `search`.

    ScopeNotVisible, Snapshot.DoesNotExist and SnapshotRefused as for `search`.
    """
    with _within(principal, wanted.query.scope) as within:
        return replicas.read_only(
            within,
            lambda: _context_pack(
                query=wanted.query, token_budget=wanted.token_budget,
                user_id=principal.user_id, now=now or timezone.now(),
                snapshot_id=wanted.query.snapshot, packing=bootstrap.packing(), keep=keep,
            ),
        )  # fmt: skip


def live_search() -> Search:
    """The live search every entrypoint's `search` runs, uncited and unnarrowed (the
    caller's tenant context is what it reads): the installed embedders, reranker and
    fusion weights bound. The golden-set evaluation searches with it; so do benchmarks
    that score the whole read path (with `record=False`, nothing logged)."""
    return bootstrap.search()


def tokenizer() -> Tokenizer:
    """What counts a context pack's tokens against its budget (the configured one)."""
    return bootstrap.providers().tokenizer()


def context_packs_expire(*, group_id: str, before: dt.datetime) -> int:
    """Delete the workspace's served packs kept since before `before` (the retention job,
    in a context of that workspace); how many were deleted."""
    return context.context_packs_expire(group_id=group_id, before=before)


def feedback_record(*, hit_id: int, helpful: bool, user_id: int | None) -> Feedback:
    """Record a user's vote on a hit they were given (REST and MCP; one per user and hit,
    voting again changes it). SearchHit.DoesNotExist for a hit the caller does not see."""
    return feedback.feedback_record(hit_id=hit_id, helpful=helpful, user_id=user_id)


# --- learning: evaluation, calibration, weights, question words --------------------------


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
        actor=actor, group_id=group_id, search=bootstrap.search(), now=now,
        trigger=trigger, floors=floors, weight_set_id=weight_set_id, run_key=run_key,
    )  # fmt: skip


def golden_import_jsonl(*, group_id: str, lines: Iterable[str]) -> evaluation.ImportReport:
    """Import golden queries into a workspace from JSON lines, all or nothing (the caller
    checks its admin role). InvalidGolden names the bad line."""
    return evaluation.golden_import_jsonl(group_id=group_id, lines=lines)


def golden_import_beir(
    *,
    group_id: str,
    folder: Path,
    split: str = "test",
    query_ids: Iterable[str] | None = None,
    limit: int | None = None,
) -> evaluation.ImportReport:
    """Import a BEIR folder's judged queries into a workspace (the caller checks its admin
    role). InvalidGolden when the folder is not in BEIR's layout."""
    return evaluation.golden_import_beir(
        group_id=group_id, folder=folder, split=split, query_ids=query_ids, limit=limit
    )


def calibration_run(
    *,
    actor: Principal,
    group_id: str,
    now: dt.datetime,
    trigger: str,
    run_key: str = "",
    window: dt.timedelta = calibration.DEFAULT_WINDOW,
    min_samples_per_class: int = MIN_SAMPLES_PER_CLASS,
    learning_rate: float = 1.0,
    activate: bool = False,
    evaluate: Callable[[WeightSet], object] | None = None,
) -> CalibrationRun:
    """Calibrate a workspace's ranking weights from its votes and keep the candidate,
    activated when asked and safe (the nightly job and `calibrate`, as the system).
    RunInProgress when another calibration of the workspace is running."""
    return calibration.calibration_run(
        actor=actor, group_id=group_id, now=now, trigger=trigger, run_key=run_key,
        window=window, min_samples_per_class=min_samples_per_class,
        learning_rate=learning_rate, activate=activate, evaluate=evaluate,
    )  # fmt: skip


def weight_set_create(*, group_id: str, weights: Weights, origin: str) -> WeightSet:
    """Store a new, inactive weight set as the workspace's next version (a manual set to
    evaluate, in a context of the workspace); activating it is `weight_set_activate`."""
    return _weight_set_create(group_id=group_id, weights=weights, origin=origin)


def weight_set_activate(
    *, actor: Principal, weight_set_id: int, reason: str = "", confirm: bool = False
) -> weights.Activation:
    """Make a weight set its workspace's active one (workspace admins, audited).
    NeedsConfirmation when it would rank worse, or is unmeasured, and `confirm` is not set."""
    return weights.weight_set_activate(
        actor=actor, weight_set_id=weight_set_id, reason=reason, confirm=confirm
    )


def weights_reset_default(*, actor: Principal, group_id: str, reason: str = "") -> str:
    """Rank the workspace with the built-in default weights again (workspace admins,
    audited); the message to show."""
    return weights.weights_reset_default(actor=actor, group_id=group_id, reason=reason)


def question_words_learn(
    *, group_id: str, since: dt.datetime, min_support: int = MIN_SUPPORT
) -> int:
    """Learn the workspace's question words from its votes since `since` as suggestions
    for its admins (the nightly job, in a context of the workspace); how many are pending."""
    return word_learning.question_words_learn(
        group_id=group_id, since=since, min_support=min_support
    )


def word_suggestion_accept(*, actor: Principal, group_id: str, pk: int) -> WordSuggestion:
    """Add a suggested question word to its predicate's sense (workspace admins, audited).
    SuggestionDecided when it was decided before; ValueError when the sense is full."""
    return word_learning.word_suggestion_accept(actor=actor, group_id=group_id, pk=pk)


def word_suggestion_dismiss(*, actor: Principal, group_id: str, pk: int) -> WordSuggestion:
    """Set a suggested question word aside for good (workspace admins, audited).
    SuggestionDecided when it was decided before."""
    return word_learning.word_suggestion_dismiss(actor=actor, group_id=group_id, pk=pk)


# --- embedding models and the index ------------------------------------------------------


def configured_embedder() -> Embedder:
    """The configured model's embedder of passages (what a new workspace is pinned to and
    indexed with)."""
    return bootstrap.providers().embedder()


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


def catch_up_progress(group_id: str) -> tuple[int, int]:
    """(documents still on a previous model, documents in all) of the workspace: how far
    its re-embedding has come (read in a context of the workspace)."""
    return embedding.catch_up_progress(group_id)


def companion_missing(group_id: str, model: str) -> QuerySet[SearchDocument]:
    """The workspace's index documents without a vector by its companion `model` (read in
    a context of the workspace)."""
    return embedding.companion_missing(group_id, model)


def groups_to_catch_up() -> list[tuple[str, bool]]:
    """(group, has stale documents) of the workspaces the catch-up job may have work for,
    across every group (the job's system finder); each is then caught up in its own."""
    return index.groups_to_catch_up()


def index_claims(*, claim_ids: list[int], embedder: Embedder | None = None) -> int:
    """Index these claims now, each workspace by its pin (or every document with the
    `embedder` given: a bulk load's own instance of the pinned model); the system does it
    in a tenant context of their workspace (a bulk load's). How many were indexed."""
    chosen = embedder if embedder is not None else offered_models()
    return index.index_claims(claim_ids=claim_ids, embedder=chosen)


def index_rebuild(*, on_progress: Callable[[int, int], None] | None = None) -> int:
    """Re-index every claim visible to the tenant context, each workspace by its pin."""
    return index.index_rebuild(embedder=offered_models(), on_progress=on_progress)


def snapshot_take(*, actor: Principal, group_id: str, name: str, reason: str = "") -> Snapshot:
    """Record a snapshot of the workspace to build (workspace admins); the caller queues
    its build after commit. SnapshotRefused says why a name will not do."""
    return snapshots.snapshot_take(actor=actor, group_id=group_id, name=name, reason=reason)


def snapshots_building() -> list[tuple[int, str]]:
    """(id, group) of the snapshots waiting to be built, across every group (the build
    job's system finder); each is then built in a context of its own group."""
    return snapshots.snapshots_building()


def snapshot_verify(snapshot: Snapshot) -> bool:
    """Whether a sealed snapshot's content still has the checksum it was sealed with (an
    admin's check)."""
    return snapshots.snapshot_verify(snapshot)


def snapshot_build(snapshot_id: int, *, actor: Principal) -> Snapshot | None:
    """Copy and seal a requested snapshot with today's pins (outside any transaction)."""
    providers = bootstrap.providers()
    pinning = snapshots.Pinning(
        catalog=providers.embedders(), reranking=providers.reranking(), fusion=providers.fusion()
    )
    return snapshots.snapshot_build(snapshot_id, actor=actor, pinning=pinning)


def snapshot_search(*, snapshot: Snapshot, query: Query) -> Result:
    """The sealed snapshot's uncited ranking for the query, with the models it pinned (the
    cited one is `search` with `query.snapshot`); SnapshotRefused says why it cannot be
    searched. Call in a context that sees the snapshot."""
    providers = bootstrap.providers()
    return snapshots.snapshot_search(
        snapshot=snapshot, query=query, catalog=providers.embedders(),
        reranking=providers.reranking(),
    )  # fmt: skip


def provider_usage_flush() -> int:
    """Move every process's metered provider usage from the ledger into Postgres."""
    return usage.provider_usage_flush(ledger=bootstrap.providers().usage_ledger())


# --- erasure -----------------------------------------------------------------------------


def erasure_preview(*, actor: Principal, kind: str, target_id: int) -> str:
    """What erasing an episode or a source would destroy: the text its confirmation shows
    (workspace admins)."""
    return erasure.erasure_preview(actor=actor, kind=kind, target_id=target_id)


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
