"""Outbox vocabulary: who consumes a job, how urgent it is, and which lane runs what (pure)."""

from __future__ import annotations

import enum


class Consumer(enum.StrEnum):
    """An independent projection of the outbox: each has its own jobs, progress and dead letters.

    One change writes one job per consumer in the same transaction, so the graph being
    down never holds up the search index, and the other way round.
    """

    GRAPH = "graph"
    INDEX = "index"


class Priority(enum.IntEnum):
    """Lower runs first: a reviewer's decision never waits behind a bulk ingest."""

    INTERACTIVE = 0
    BULK = 10
    MAINTENANCE = 20


class Lane(enum.StrEnum):
    """Celery queues, each with its own worker processes."""

    INTERACTIVE = "interactive"  # review decisions, merges, feedback and their projection
    PROJECTION = "projection"  # the outbox consumers, bulk
    INGEST = "ingest"  # connector runs
    MAINTENANCE = "maintenance"  # scheduler, health, nightly jobs


CONSUMERS: tuple[Consumer, ...] = tuple(Consumer)

# The one outbox kind for claims: "bring each projection in line with the claim's row".
# Published claims are upserted; superseded and retracted ones leave the graph and stay
# in the index for `as_of`. (Before the lanes, supersession wrote "claim.retire";
# handlers still accept it for jobs written then.)
PROJECT_CLAIM = "claim.project"
LEGACY_RETIRE = "claim.retire"
# What an erasure leaves to do outside Postgres (graph, object store, caches), queued in
# its transaction and visible a little later: the request does it at once; should the
# process die first, a worker does the same, idempotent, work.
ERASURE_CLEANUP = "erasure.cleanup"
# Kinds a consumer's batch handler never takes (they run job by job, each its own).
UNBATCHED_KINDS = frozenset({ERASURE_CLEANUP})
