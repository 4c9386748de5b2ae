"""Every Prometheus metric VERA exports, defined once, and the hooks that feed them.

Labels are bounded: routes, stages, lanes, consumers, providers and models, never a
tenant's group id (a tenant is a span attribute, vera/tracing.py). With
PROMETHEUS_MULTIPROC_DIR set, every process (each gunicorn worker, each Celery process,
beat, the MCP server) writes its samples to files there and `/metrics` merges them, so
counts add up over processes; each gauge says how its per-process values merge
(`multiprocess_mode`). Compose shares one folder between all its containers, whose
process ids repeat (each container counts from 1), so a file is named by host and pid.

The apps below `vera` cannot import this module; the composition root (vera/wiring.py)
hands them its hooks (`ProviderMetrics`, `usage_recorded`, `search_observed`).
"""

from __future__ import annotations

import atexit
import os
import re
import socket
from collections.abc import Mapping
from typing import Final

from prometheus_client import (
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
    values,
)

from kernel.resilience import BreakerState, CircuitBreaker
from retrieval.adapters.embedders.metering import Usage


def process_identifier(pid: int | None = None) -> str:
    """The name of a process's sample files: this host's name and the pid (this process's
    by default). No "_": the collector reads the files' names split on it."""
    host = re.sub(r"[^A-Za-z0-9.-]", "-", socket.gethostname()) or "host"
    return f"{host}-{os.getpid() if pid is None else pid}"


def process_dead(pid: int | None = None) -> None:
    """Drop a finished process's live gauges from the shared folder (its counts stay:
    they happened); this process by default. Nothing to do without the folder."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        multiprocess.mark_process_dead(process_identifier(pid))


# Before any metric below exists: prometheus-client names the files by pid alone, which two
# containers sharing the folder both use. Each process also drops its live gauges when it
# exits normally (gunicorn and Celery's pool processes are told by their parent as well).
if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    values.ValueClass = values.MultiProcessValue(process_identifier=process_identifier)
    atexit.register(process_dead)

# The figures measured when scraped (lanes, dead letters): the latest measurement is the
# truth, whichever process took it.
MEASURED: Final = "mostrecent"

OUTBOX_BACKLOG = Gauge(
    "vera_outbox_backlog",
    "Visible pending outbox jobs of the lane: due, neither leased nor backing off.",
    ["lane"],
    multiprocess_mode=MEASURED,
)
OUTBOX_OLDEST_AGE = Gauge(
    "vera_outbox_oldest_age_seconds",
    "How long the lane's longest-waiting visible pending job has been due, in seconds.",
    ["lane"],
    multiprocess_mode=MEASURED,
)
LANE_DEGRADED = Gauge(
    "vera_lane_degraded",
    "1 while the lane's backlog or wait passes its threshold (VERA_BACKPRESSURE__*), else 0.",
    ["lane"],
    multiprocess_mode=MEASURED,
)
OUTBOX_DEAD_LETTERS = Gauge(
    "vera_outbox_dead_letters",
    "Outbox jobs of the consumer that ran out of attempts and wait for an operator.",
    ["consumer"],
    multiprocess_mode=MEASURED,
)

HTTP_REQUEST_DURATION = Histogram(
    "vera_http_request_duration_seconds",
    "Time the Django stack took per request (as Server-Timing's app), by URL pattern; "
    "its _count is the number of requests.",
    ["route", "method", "status"],
)
READ_BLOCKS = Counter(
    "vera_read_blocks_total",
    "Blocks of read-only work (searches, packs, GET pages and lists) by the database that "
    "served them: `primary` or a standby's alias (tenants/replicas.py).",
    ["database"],
)
REPLICA_LAG = Gauge(
    "vera_replica_lag_seconds",
    "How far a read replica's replay was behind the primary at its last check (-1: down).",
    ["replica"],
    multiprocess_mode=MEASURED,
)
SEARCH_STAGE = Histogram(
    "vera_search_stage_seconds",
    "Time one live search spent in a stage (lexical, embed, vector, blend, rerank, log).",
    ["stage"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
)

INGEST_RUNS = Counter(
    "vera_ingest_runs",
    "Source ingestion runs by the worker, by outcome (ok, failed, skipped, stopped).",
    ["status"],
)
INGEST_DOCUMENTS = Counter(
    "vera_ingest_documents",
    "Records the worker's ingestion runs read: new, unchanged or failed.",
    ["outcome"],
)
INGEST_CLAIMS = Counter(
    "vera_ingest_claims",
    "Claims the worker's ingestion runs cited, by the status they got (and repeated).",
    ["status"],
)

PROVIDER_CALLS = Counter(
    "vera_provider_calls",
    "Requests to a provider (embedding, reranking, the LLM extractor and judges, the "
    "object store) through its guard, by outcome: ok, error (failed after the retries, or "
    "rejected), circuit_open (not attempted).",
    ["provider", "model", "outcome"],
)
PROVIDER_BREAKER_OPEN = Gauge(
    "vera_provider_breaker_open",
    "1 while a live process's circuit breaker for the provider is not closed (open or "
    "waiting for its trial call), else 0; as of that process's last call.",
    ["provider"],
    multiprocess_mode="livemax",
)
PROVIDER_TOKENS = Counter(
    "vera_provider_tokens",
    "Tokens billed by providers: embeddings (cache misses only), reranking, chat models "
    "(prompt and answer); estimated where the provider does not count them.",
    ["provider", "model"],
)
PROVIDER_COST = Counter(
    "vera_provider_cost_usd",
    "What provider calls cost, in USD, at the price tables' rates (a chat model's input "
    "and output tokens each at theirs).",
    ["provider", "model"],
)

EVAL_RUNS = Counter(
    "vera_eval_runs",
    "Golden-set evaluations of a workspace by the nightly job, by status (passed, failed, "
    "empty; skipped, error). The scores are each run's row (the quality page), not a label.",
    ["status"],
)
CALIBRATION_RUNS = Counter(
    "vera_calibration_runs",
    "Calibrations of a workspace by the nightly job, by outcome (candidate, activated, "
    "too_few_samples, no_signal; skipped, error).",
    ["outcome"],
)
# The tasks' per-workspace outcome strings start with one of these, then ": <detail>".
_LEARNING_TASKS = {
    "retrieval.evaluate_workspaces": EVAL_RUNS,
    "retrieval.calibrate_workspaces": CALIBRATION_RUNS,
}


def exposition() -> bytes:
    """Every process's samples in the Prometheus text format.

    With PROMETHEUS_MULTIPROC_DIR set, the samples of all the processes that wrote there
    (every process of the deployment) are merged into a fresh registry; otherwise this
    process's own.
    """
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry)
    return generate_latest(REGISTRY)


def search_observed(timings: Mapping[str, float]) -> None:
    """Record one search's stage timings (milliseconds per stage, `Result.timings`)."""
    for stage, ms in timings.items():
        SEARCH_STAGE.labels(stage=stage).observe(ms / 1000)


def usage_recorded(provider: str, model: str, added: Usage) -> None:
    """Record one batch of metered provider work (retrieval's `Meter` calls this)."""
    PROVIDER_TOKENS.labels(provider=provider, model=model).inc(added.tokens)
    PROVIDER_COST.labels(provider=provider, model=model).inc(added.cost_usd)


def ingest_finished(result: Mapping[str, object]) -> None:
    """Record one ingestion run from the `curation.ingest_source` task's result."""
    INGEST_RUNS.labels(status=str(result.get("status", "failed"))).inc()
    for outcome in ("new", "unchanged", "failed"):
        count = result.get(outcome)
        if isinstance(count, int) and count:
            INGEST_DOCUMENTS.labels(outcome=outcome).inc(count)
    claims = result.get("claims")
    if isinstance(claims, Mapping):
        for status, count in claims.items():
            if isinstance(count, int) and count:
                INGEST_CLAIMS.labels(status=str(status).lower()).inc(count)


def learning_finished(task_name: str, result: Mapping[str, object]) -> None:
    """Count each workspace's run from a nightly learning task's result ({group: outcome})."""
    counter = _LEARNING_TASKS.get(task_name)
    if counter is None:
        return
    for outcome in result.values():
        first = str(outcome).split(":", 1)[0].strip().lower()
        # Bounded even if a task ever reports something new: one "other" value.
        label = first if first.isidentifier() and len(first) <= 20 else "other"
        counter.labels(label).inc()


class ProviderMetrics:
    """`common.guarded.CallObserver`: each guarded provider request and its breaker's state."""

    def call_finished(
        self, *, provider: str, model: str, outcome: str, breaker: CircuitBreaker | None
    ) -> None:
        PROVIDER_CALLS.labels(provider=provider, model=model, outcome=outcome).inc()
        if breaker is not None:
            is_open = breaker.state is not BreakerState.CLOSED
            PROVIDER_BREAKER_OPEN.labels(provider=provider).set(int(is_open))


def read_served(alias: str) -> None:
    """One block of read-only work served by `alias` (the primary is `default`)."""
    READ_BLOCKS.labels(database="primary" if alias == "default" else alias).inc()


def replica_checked(alias: str, lag_s: float | None) -> None:
    REPLICA_LAG.labels(replica=alias).set(-1.0 if lag_s is None else lag_s)
