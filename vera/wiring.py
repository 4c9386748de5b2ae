"""The composition root: the one place that reads settings and builds adapters.

Built objects are cached per process and dropped when a test overrides a setting.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import redis
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.dispatch import receiver

from curation.adapters.connectors import CONNECTORS, build_connector
from curation.adapters.object_store import LocalFolderObjectStore, S3ObjectStore
from curation.domain import connector_config
from curation.domain.connector_config import (
    Extraction,
    declaration_refusals,
    kind_rules,
    time_zone,
)
from curation.domain.extraction import RuleBasedExtractor, StructuredExtractor
from curation.domain.extraction.conversation import ConversationExtractor
from curation.domain.extraction.structured import cmdb_mapping
from curation.domain.outbox import ERASURE_CLEANUP, LEGACY_RETIRE, PROJECT_CLAIM, Consumer
from curation.domain.sources import AGENT_KIND, ConnectorKind
from curation.models import OutboxJob, Source
from curation.ports import (
    ContradictionJudge,
    Embedder,
    EquivalenceJudge,
    Extractor,
    GraphProjection,
    ObjectStore,
)
from curation.services import projection
from curation.services.ingest import IngestAdapters, ReadAdapters
from curation.services.outbox import BatchHandler, Handler
from curation.services.sources import source_policy, source_secret_refusal
from retrieval.adapters.embedders.metering import Meter, Usage
from retrieval.ports import EmbedderCatalog, Reranker, Reranking, Tokenizer, UsageLedger
from retrieval.services.erasure import erasure_cleanup_job
from retrieval.services.index import index_job, index_jobs, index_prepare
from tenants.adapters.rate_limits import RedisRateLimiter

from . import metrics

if TYPE_CHECKING:
    from retrieval.adapters.usage_ledger import RedisUsageLedger

GRAPH_BACKENDS = ("falkordb", "neo4j")
RERANKER_PROVIDERS = ("voyage", "llm")


@functools.cache
def graph() -> GraphProjection:
    """The configured graph projection (VERA_MEMORY__GRAPH_BACKEND)."""
    backend = settings.VERA_MEMORY__GRAPH_BACKEND
    if backend == "falkordb":
        from curation.adapters.falkordb import FalkorDBGraphProjection

        return FalkorDBGraphProjection(
            url=settings.VERA_MEMORY__FALKORDB_URL, graph_name=settings.VERA_MEMORY__GRAPH_NAME
        )
    if backend == "neo4j":
        from curation.adapters.neo4j import Neo4jGraphProjection

        if not settings.VERA_NEO4J__URI:
            raise ImproperlyConfigured("VERA_MEMORY__GRAPH_BACKEND=neo4j needs VERA_NEO4J__URI.")
        return Neo4jGraphProjection(
            uri=settings.VERA_NEO4J__URI,
            user=settings.VERA_NEO4J__USER,
            password=settings.VERA_NEO4J__PASSWORD,
            database=settings.VERA_NEO4J__DATABASE,
        )
    raise ImproperlyConfigured(
        f"VERA_MEMORY__GRAPH_BACKEND={backend!r}; choose one of {', '.join(GRAPH_BACKENDS)}."
    )


@functools.cache
def redis_client() -> redis.Redis:
    """A Redis client for health checks, rate limits and caches outside Django's cache API."""
    return redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=2, socket_timeout=2)


@functools.cache
def rate_limiter() -> RedisRateLimiter:
    """The REST API's request counters (VERA_RATE_LIMIT__*), kept in the shared Redis."""
    return RedisRateLimiter(redis_client())


def reset() -> None:
    """Close and forget every built adapter (settings changed, or a worker forked)."""
    for factory in (graph, redis_client, object_store, embedder, query_embedder):
        if factory.cache_info().currsize:
            # Closing a broken client must not stop the reset.
            with contextlib.suppress(Exception):
                close = getattr(factory(), "close", None)  # not every port has one
                if callable(close):
                    close()
        factory.cache_clear()
    provider_embedder.cache_clear()
    rate_limiter.cache_clear()
    usage_ledger.cache_clear()
    embedder_catalog.cache_clear()
    judges.cache_clear()
    llm_extractor.cache_clear()
    reranking.cache_clear()


@receiver(setting_changed)
def _on_setting_changed(*, setting: str, **_: Any) -> None:
    if setting.startswith(("VERA_", "REDIS_")):
        reset()


# --- curation ---------------------------------------------------------------------------


@functools.cache
def object_store() -> ObjectStore:
    """The raw-artifact store (VERA_OBJECT_STORE__BACKEND=local|s3)."""
    backend = settings.VERA_OBJECT_STORE__BACKEND
    if backend == "local":
        return LocalFolderObjectStore(settings.VERA_OBJECT_STORE__ROOT)
    if backend == "s3":
        return _s3_object_store()
    raise ImproperlyConfigured(f"VERA_OBJECT_STORE__BACKEND={backend!r}; choose local or s3.")


def _s3_object_store() -> ObjectStore:
    """S3 / MinIO with bounded timeouts and retries, behind the process's one breaker.

    botocore retries a transient error (standard mode: throttling, 5xx, connection) up
    to VERA_OBJECT_STORE__RETRIES times; the breaker does not retry again, so attempts
    never multiply. Credentials come from the AWS chain (AWS_* in compose), never a row.
    """
    import boto3
    from botocore.config import Config

    from curation.adapters.object_store import ResilientObjectStore
    from kernel.resilience import CircuitBreaker

    connect_s = settings.VERA_OBJECT_STORE__CONNECT_TIMEOUT_S
    read_s = settings.VERA_OBJECT_STORE__READ_TIMEOUT_S
    retries = settings.VERA_OBJECT_STORE__RETRIES
    if connect_s <= 0 or read_s <= 0 or retries < 0:
        raise ImproperlyConfigured(
            "VERA_OBJECT_STORE__CONNECT_TIMEOUT_S and __READ_TIMEOUT_S must be positive and "
            f"__RETRIES at least 0, not {connect_s}, {read_s} and {retries}."
        )
    config = Config(
        connect_timeout=connect_s,
        read_timeout=read_s,
        retries={"mode": "standard", "total_max_attempts": retries + 1},
    )
    client = boto3.client(
        "s3", endpoint_url=settings.VERA_OBJECT_STORE__ENDPOINT_URL or None, config=config
    )
    return ResilientObjectStore(
        S3ObjectStore(bucket=settings.VERA_OBJECT_STORE__BUCKET, client=client),
        breaker=CircuitBreaker(failure_threshold=5, reset_after_s=30.0, name="object-store"),
        retries=0,  # botocore's own, above
        observer=metrics.ProviderMetrics(),
    )


def source_secret(source: Source) -> str | None:
    """The source's secret from the environment variable it names (never from the row).

    The name is checked again here, against the operator's prefix and grants: a row
    written around the services (forged, older than the rule, or a grant withdrawn
    since) must not send DATABASE_URL, or another workspace's token, anywhere.
    """
    reason = source_secret_refusal(
        token_env=source.token_env, group_id=source.group_id, policy=source_policy()
    )
    if reason:
        raise ValueError(reason)
    return required_env(source.token_env) if source.token_env else None


def required_env(name: str) -> str:
    """A secret from the environment; a ValueError (a run fails with this reason) if unset."""
    value = os.environ.get(name, "")
    if not value:
        raise ValueError(f"environment variable {name} is not set")
    return value


def openai_client(*, timeout: float, base_url: str = "", max_retries: int = 2) -> Any:
    """An OpenAI(-compatible) client; the key comes from OPENAI_API_KEY, never a setting row."""
    from openai import OpenAI

    return OpenAI(
        api_key=required_env("OPENAI_API_KEY"),
        base_url=base_url or None,
        timeout=timeout,
        max_retries=max_retries,
    )


def extractors_for(source: Source) -> list[Extractor]:
    """The extractors the source's kind declares (`KindRules.extraction`), in order, each
    configured from the source; the LLM's only when one is configured."""
    if source.kind == AGENT_KIND:
        return []  # what agents propose is read from no document: nothing to extract
    rules = kind_rules(source.kind)
    if rules is None:
        raise ValueError(f"unknown connector kind {source.kind!r}: it declares no extraction")
    built = (_EXTRACTORS[how](source) for how in rules.extraction)
    return [extractor for extractor in built if extractor is not None]


def _structured(source: Source) -> Extractor:
    # A CMDB source's own columns (config `mapping`) over the defaults; Jira's are fixed.
    mapping = source.config.get("mapping")
    return StructuredExtractor(
        mapping=cmdb_mapping(mapping) if mapping is not None else None,
        valid_from_field=source.config.get("valid_from_field"),
        valid_to_field=source.config.get("valid_to_field"),
    )


def _conversation(source: Source) -> Extractor:
    # A turn at a time, dated and attributed, naive times read in the source's zone.
    return ConversationExtractor(zone=time_zone(source.config.get("timezone") or "UTC"))


def _llm(source: Source) -> Extractor | None:
    return llm_extractor() if settings.VERA_EXTRACTOR__LLM_MODEL else None


_EXTRACTORS: dict[Extraction, Callable[[Source], Extractor | None]] = {
    Extraction.STRUCTURED: _structured,
    Extraction.CONVERSATION: _conversation,
    Extraction.RULES: lambda source: RuleBasedExtractor(),
    Extraction.LLM: _llm,
}


def connector_kinds_check() -> None:
    """At start: every connector kind VERA lists declares its rules and an extraction
    that runs without a model, and has a connector and an extractor for each step it
    declares; ImproperlyConfigured names each that does not (a new kind cannot ship
    half-wired and silently get the wrong extractors)."""
    refusals = declaration_refusals(connector_config.KINDS)
    refusals += [f"connector kind {kind.value!r} has no connector" for kind in ConnectorKind
                 if kind not in CONNECTORS]  # fmt: skip
    refusals += [f"extraction {how.value!r} has no extractor" for how in Extraction
                 if how not in _EXTRACTORS]  # fmt: skip
    if refusals:
        raise ImproperlyConfigured("; ".join(refusals))


def _llm_guard(name: str) -> dict[str, Any]:
    """A chat model role's breaker, bucket and retries (VERA_LLM__*), and its metrics."""
    from kernel.resilience import CircuitBreaker, TokenBucket

    rate = settings.VERA_LLM__RATE_PER_S
    return {
        "breaker": CircuitBreaker(failure_threshold=5, reset_after_s=30.0, name=name),
        "bucket": TokenBucket(rate_per_s=rate, burst=rate),
        "retries": settings.VERA_LLM__RETRIES,
        "observer": metrics.ProviderMetrics(),
    }


@functools.cache
def llm_extractor() -> Extractor:
    """The LLM extractor (VERA_EXTRACTOR__LLM_MODEL), guarded; one breaker per process,
    so an outage seen by one ingestion run is known to the next."""
    from curation.adapters.extractors.llm import LLMExtractor
    from curation.adapters.resilient import ResilientExtractor

    client = openai_client(
        base_url=settings.VERA_EXTRACTOR__LLM_BASE_URL,
        timeout=settings.VERA_LLM__TIMEOUT_S,
        max_retries=0,  # ResilientExtractor retries; the SDK's own would multiply them
    )
    inner = LLMExtractor(
        client=client, model=settings.VERA_EXTRACTOR__LLM_MODEL, meter=provider_meter()
    )
    return ResilientExtractor(inner, **_llm_guard("llm-extractor"))


@functools.cache
def judges() -> tuple[EquivalenceJudge | None, ContradictionJudge | None]:
    """The LLM judges (VERA_JUDGE__LLM_MODEL), guarded, or (None, None): then nothing is
    merged. An unavailable judge gives no judgement (JudgeUnavailable), never a "no"."""
    if not settings.VERA_JUDGE__LLM_MODEL:
        return None, None
    from curation.adapters.judges import LLMContradictionJudge, LLMEquivalenceJudge
    from curation.adapters.resilient import (
        ResilientContradictionJudge,
        ResilientEquivalenceJudge,
    )

    client = openai_client(
        base_url=settings.VERA_JUDGE__LLM_BASE_URL,
        timeout=settings.VERA_LLM__TIMEOUT_S,
        max_retries=0,  # the Resilient judges retry
    )
    model, threshold = settings.VERA_JUDGE__LLM_MODEL, settings.VERA_JUDGE__THRESHOLD
    equivalence = LLMEquivalenceJudge(
        client=client, model=model, threshold=threshold,
        cache_size=settings.VERA_JUDGE__CACHE_SIZE, meter=provider_meter(),
    )  # fmt: skip
    contradiction = LLMContradictionJudge(
        client=client, model=model, threshold=threshold, meter=provider_meter()
    )
    return (
        ResilientEquivalenceJudge(equivalence, **_llm_guard("equivalence-judge")),
        ResilientContradictionJudge(contradiction, **_llm_guard("contradiction-judge")),
    )


EMBEDDER_PROVIDERS = ("hashing", "minilm", "e5", "openai", "voyage")
LOCAL_EMBEDDERS = ("hashing", "minilm", "e5")  # no network: no breaker, no rate limit


@functools.cache
def embedder() -> Embedder:
    """The default embedder (VERA_EMBEDDER__PROVIDER) for what is indexed, with its caches."""
    return provider_embedder(settings.VERA_EMBEDDER__PROVIDER, "passage")


@functools.cache
def query_embedder() -> Embedder:
    """The same model for search queries: the query sibling where the model has roles.

    e5 and Voyage embed a query differently from a passage (a prefix, an input type);
    the others embed both alike, and this is `embedder()` itself.
    """
    return provider_embedder(settings.VERA_EMBEDDER__PROVIDER, "query")


@functools.cache
def embedder_catalog() -> EmbedderCatalog:
    """The models workspaces may be indexed with: the default, then VERA_EMBEDDER__CHOICES."""
    from retrieval.adapters.embedders import Catalog

    default = settings.VERA_EMBEDDER__PROVIDER
    offered = dict.fromkeys([default, *settings.VERA_EMBEDDER__CHOICES])
    companion = settings.VERA_EMBEDDER__COMPANION
    if companion and companion not in offered:
        raise ImproperlyConfigured(
            f"VERA_EMBEDDER__COMPANION is {companion!r}, which is not offered: add it to "
            "VERA_EMBEDDER__CHOICES, or leave the companion empty."
        )
    conversations = settings.VERA_EMBEDDER__CONVERSATION_COMPANION
    if conversations and conversations not in offered:
        raise ImproperlyConfigured(
            f"VERA_EMBEDDER__CONVERSATION_COMPANION is {conversations!r}, which is not "
            'offered: add it to VERA_EMBEDDER__CHOICES, or set it to "" for none.'
        )
    for provider in offered:
        if provider not in EMBEDDER_PROVIDERS:
            raise ImproperlyConfigured(
                f"VERA_EMBEDDER__CHOICES names {provider!r}; choose among "
                f"{', '.join(EMBEDDER_PROVIDERS)}."
            )
    return Catalog(
        default=default,
        models={
            provider: (
                functools.partial(provider_embedder, provider, "passage"),
                functools.partial(provider_embedder, provider, "query"),
            )
            for provider in offered
        },
    )


@functools.cache
def provider_embedder(provider: str, role: str) -> Embedder:
    """One offered provider's embedder in a role ("passage" or "query"), built once."""
    return _embedder(provider=provider, role=role)


def _embedder(*, provider: str, role: str) -> Embedder:
    from retrieval.adapters import embedders

    if provider == "hashing":
        return embedders.HashingEmbedder(dimension=settings.VERA_EMBEDDER__DIMENSION or 256)
    if role == "query" and provider == "minilm":
        # one model, one cache: a query is embedded as a passage is
        return provider_embedder(provider, "passage")
    inner: Embedder
    if provider == "minilm":
        inner = embedders.MiniLMEmbedder()
    elif provider == "e5":
        inner = embedders.E5Embedder(
            role="query" if role == "query" else "passage",
            threads=settings.VERA_EMBEDDER__THREADS or None,
        )
    elif provider == "openai":
        inner = embedders.OpenAIEmbedder(
            # Our ResilientEmbedder retries; the client's own retries would multiply them.
            client=openai_client(timeout=settings.VERA_EMBEDDER__TIMEOUT_S, max_retries=0),
            model=settings.VERA_EMBEDDER__MODEL or "text-embedding-3-small",
            dimension=settings.VERA_EMBEDDER__DIMENSION or 1536,
        )
    elif provider == "voyage":
        import voyageai

        inner = embedders.VoyageEmbedder(
            client=voyageai.Client(
                api_key=required_env("VOYAGE_API_KEY"),
                max_retries=0,
                timeout=settings.VERA_EMBEDDER__TIMEOUT_S,
            ),
            model=settings.VERA_EMBEDDER__MODEL or "voyage-3.5",
            dimension=settings.VERA_EMBEDDER__DIMENSION or 1024,
            input_type="query" if role == "query" else "document",
        )
    else:
        raise ImproperlyConfigured(
            f"VERA_EMBEDDER__PROVIDER={provider!r}; choose {', '.join(EMBEDDER_PROVIDERS)}."
        )
    # Cache outside, resilience inside: hits never wait for a token or a breaker.
    resilient: Embedder = inner
    if provider not in LOCAL_EMBEDDERS:
        from kernel.resilience import CircuitBreaker, TokenBucket

        resilient = embedders.ResilientEmbedder(
            inner,
            breaker=CircuitBreaker(failure_threshold=5, reset_after_s=30.0),
            bucket=TokenBucket(
                rate_per_s=settings.VERA_EMBEDDER__RATE_PER_S,
                burst=settings.VERA_EMBEDDER__RATE_PER_S,
            ),
            observer=metrics.ProviderMetrics(),
        )
    cache_redis = redis.Redis.from_url(
        settings.CACHES["default"]["LOCATION"], socket_connect_timeout=1, socket_timeout=1
    )
    return embedders.CachedEmbedder(resilient, redis=cache_redis, meter=provider_meter())


@functools.cache
def provider_meter() -> Meter:
    """Counts every provider call, its tokens and its cost: embeddings (cache hits cost
    nothing), the rerankers, the LLM extractor and judges (`common.chat_json.UsageMeter`); exported
    as `vera_provider_tokens_total` and `vera_provider_cost_usd_total` and charged to the
    workspace the work was for (the admin's cost page, `usage_ledger`)."""

    def recorded(provider: str, model: str, added: Usage) -> None:
        metrics.usage_recorded(provider, model, added)
        usage_ledger().record(provider, model, added)

    return Meter(on_record=recorded)


@functools.cache
def usage_ledger() -> RedisUsageLedger:
    """Metered provider usage of every process, in Redis until beat flushes it to Postgres.

    One ledger per database: deployments (or test runs) sharing a Redis never drain
    each other's usage into their own workspaces' rows.
    """
    from django.db import connection

    from retrieval.adapters.usage_ledger import RedisUsageLedger

    return RedisUsageLedger(
        redis_client(), key=f"vera:provider-usage:{connection.settings_dict['NAME']}"
    )


@functools.cache
def reranking() -> Reranking | None:
    """The stage-3 reranker (VERA_RERANKER__PROVIDER), or None: search keeps stage 2's order."""
    provider = settings.VERA_RERANKER__PROVIDER
    if not provider:
        return None
    from kernel.resilience import CircuitBreaker, TokenBucket
    from retrieval.adapters import rerankers

    rate = settings.VERA_RERANKER__RATE_PER_S
    resilient = rerankers.ResilientReranker(
        _reranker(provider),
        breaker=CircuitBreaker(failure_threshold=5, reset_after_s=30.0, name="reranker"),
        bucket=TokenBucket(rate_per_s=rate, burst=rate),
        observer=metrics.ProviderMetrics(),
    )
    return Reranking(
        reranker=resilient,
        top_n=settings.VERA_RERANKER__TOP_N,
        weight=settings.VERA_RERANKER__WEIGHT,
    )


def _reranker(provider: str) -> Reranker:
    """The provider's reranker; the SDK does not retry (ResilientReranker does)."""
    from retrieval.adapters import rerankers

    model, timeout = settings.VERA_RERANKER__MODEL, settings.VERA_RERANKER__TIMEOUT_S
    if provider == "voyage":
        import voyageai

        client = voyageai.Client(
            api_key=required_env("VOYAGE_API_KEY"), max_retries=0, timeout=timeout
        )
        return rerankers.VoyageReranker(
            client=client, model=model or "rerank-2.5", meter=provider_meter()
        )
    if provider == "llm":
        if not model:
            raise ImproperlyConfigured("VERA_RERANKER__PROVIDER=llm needs VERA_RERANKER__MODEL.")
        client = openai_client(
            base_url=settings.VERA_RERANKER__BASE_URL, timeout=timeout, max_retries=0
        )
        return rerankers.LLMReranker(client=client, model=model, meter=provider_meter())
    raise ImproperlyConfigured(
        f"VERA_RERANKER__PROVIDER={provider!r}; choose {' or '.join(RERANKER_PROVIDERS)}, "
        "or leave it empty for no reranker."
    )


FUSION_LISTS = ("fulltext", "vector")


def fusion_weights() -> dict[str, float]:
    """VERA_SEARCH__FUSION_WEIGHTS ("fulltext=1.0,vector=0.5") as list name -> weight."""
    weights: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in settings.VERA_SEARCH__FUSION_WEIGHTS.split(","))):
        name, _, value = part.partition("=")
        name = name.strip()
        try:
            weight = float(value)
        except ValueError:
            weight = -1.0
        if name not in FUSION_LISTS or not (weight >= 0 and weight != float("inf")):
            raise ImproperlyConfigured(
                f"VERA_SEARCH__FUSION_WEIGHTS: {part!r}; write list=weight with a list of "
                f"{', '.join(FUSION_LISTS)} and a finite weight >= 0"
            )
        weights[name] = weight
    return weights


@functools.cache
def tokenizer() -> Tokenizer:
    """Context packs count their budget with the local MiniLM's WordPiece tokenizer (no
    network, so no tiktoken): it approximates GPT-style tokenizers (see the adapter)."""
    from retrieval.adapters.tokenizer import WordPieceTokenizer

    return WordPieceTokenizer()


class RetrievalProviders:
    """retrieval.bootstrap.Providers, built from settings."""

    def embedder(self) -> Embedder:
        return embedder()

    def query_embedder(self) -> Embedder:
        return query_embedder()

    def embedders(self) -> EmbedderCatalog:
        return embedder_catalog()

    def reranking(self) -> Reranking | None:
        return reranking()

    def fusion(self) -> dict[str, float]:
        return fusion_weights()

    def search_observed(self, timings: Mapping[str, float]) -> None:
        metrics.search_observed(timings)

    def usage_ledger(self) -> UsageLedger:
        return usage_ledger()

    def tokenizer(self) -> Tokenizer:
        return tokenizer()

    def graph(self) -> GraphProjection:
        return graph()

    def object_store(self) -> ObjectStore:
        return object_store()


class CurationProviders:
    """curation.bootstrap.Providers, built from settings."""

    def ingest_adapters_for(self, source: Source) -> IngestAdapters:
        # The secret is checked and read first: a refused name fails the run before any
        # connector exists. The policy includes what an operator granted this source.
        secret = source_secret(source)
        policy = source_policy(reach=source.reach)
        connector = build_connector(source.kind, source.config, secret=secret, policy=policy)
        equivalence, contradiction = judges()
        # The embedder serves semantic entity resolution (exact -> trigram -> semantic);
        # without a judge, the ambiguous band becomes merge candidates, never a merge.
        return IngestAdapters(
            connector=connector,
            store=object_store(),
            extractors=extractors_for(source),
            embedder=embedder(),
            equivalence=equivalence,
            contradiction=contradiction,
        )

    def read_adapters_for(self, source: Source) -> ReadAdapters:
        equivalence, contradiction = judges()
        return ReadAdapters(
            store=object_store(),
            extractors=extractors_for(source),
            embedder=embedder(),
            equivalence=equivalence,
            contradiction=contradiction,
        )

    def graph(self) -> GraphProjection:
        return graph()

    def object_store(self) -> ObjectStore:
        return object_store()

    def outbox_handlers(self, consumer: Consumer) -> dict[str, Handler]:
        # The graph and the search index are independent consumers of the same changes.
        if consumer is Consumer.GRAPH:
            project = functools.partial(projection.project_claim, graph=graph())
            cleanup = functools.partial(
                erasure_cleanup_job, graph=graph(), store=object_store(),
                catalog=embedder_catalog(),
            )  # fmt: skip
            return {PROJECT_CLAIM: project, LEGACY_RETIRE: project, ERASURE_CLEANUP: cleanup}
        index = functools.partial(index_job, embedder=embedder_catalog())
        return {PROJECT_CLAIM: index, LEGACY_RETIRE: index}

    def outbox_prepare(self, consumer: Consumer) -> Callable[[list[OutboxJob]], None] | None:
        if consumer is Consumer.INDEX:
            return functools.partial(index_prepare, embedder=embedder_catalog())
        return None

    def outbox_batch(self, consumer: Consumer) -> BatchHandler | None:
        # Both write many claims at once: the index in bulk statements (its statistics
        # triggers run once a statement), the graph in UNWIND statements.
        if consumer is Consumer.INDEX:
            return functools.partial(index_jobs, embedder=embedder_catalog())
        return functools.partial(projection.project_jobs, graph=graph())

    def outbox_available(self, consumer: Consumer) -> str:
        """Why the consumer's backend cannot take work now ("" when it can).

        A consumer whose backend is down leaves its jobs waiting, untouched, instead of
        spending their attempts: they catch up when it returns.
        """
        if consumer is Consumer.GRAPH:
            try:
                graph().ping()
            except Exception as error:
                return f"{type(error).__name__}: {error}"
        return ""
