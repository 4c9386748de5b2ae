"""Ports of the curation app: the external capabilities it needs, as Protocols."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from typing import Protocol

from curation.domain.graph import GraphDump, GraphEdge, Neighbour
from curation.domain.records import ExtractedClaim, FetchPage, SourceRecord


class GraphProjection(Protocol):
    """The graph that claims are projected into: a read model, rebuildable from Postgres.

    Claims that are or were valid (published, superseded) are edges carrying their
    validity; every node and edge carries its group id, and every read names the
    groups it may see.
    """

    backend: str

    def ping(self) -> None:
        """Round-trip a trivial query; raise if the graph server cannot answer."""

    def ensure_schema(self) -> None:
        """Create the indexes on node keys, node groups and claim ids (idempotent)."""

    def upsert_claim(self, edge: GraphEdge) -> None:
        """Create or update the claim's edge and its two nodes (idempotent)."""

    def upsert_claims(self, edges: Sequence[GraphEdge]) -> None:
        """`upsert_claim` for many claims in a few statements (each claim at most once)."""

    def insert_claims(self, edges: Sequence[GraphEdge]) -> None:
        """`upsert_claims` into a group just cleared (a rebuild): no edge of these claims
        can exist elsewhere, so none is looked for (an edge already there is merged)."""

    def remove_claim(self, claim_id: int) -> None:
        """Remove the claim's edge if present, and nodes left without edges (idempotent)."""

    def remove_claims(self, claim_ids: Sequence[int]) -> None:
        """`remove_claim` for many claims in a few statements."""

    def clear(self) -> None:
        """Drop everything (before a full rebuild from Postgres)."""

    def clear_group(self, group_id: str) -> None:
        """Drop one group's nodes and edges (before rebuilding that group)."""

    def neighbours(
        self,
        key: str,
        *,
        group_ids: Sequence[str],
        hops: int = 1,
        as_of: dt.datetime | None = None,
        predicates: Sequence[str] | None = None,
        limit: int = 200,
    ) -> list[Neighbour]:
        """Nodes within `hops` (1-3) of the node `key` through claims of `group_ids`
        valid now (or `as_of`), of the given predicates only if any; shortest first."""
        ...

    def dump(self, group_id: str) -> GraphDump:
        """The group's nodes and edges in canonical form (for comparing with a rebuild)."""
        ...

    def count_claims(self) -> int:
        """How many claim edges the graph holds."""
        ...

    def close(self) -> None:
        """Release connections."""


class Connector(Protocol):
    """Pulls records from one source incrementally, page by page, from a cursor."""

    kind: str

    def pages(self, *, cursor: str | None) -> Iterator[FetchPage]:
        """Yield pages of records changed since `cursor`; each page carries the next cursor.

        A record that cannot be fetched or decoded is yielded as a RecordFailure; only
        an error that makes the whole source unreachable is raised (ConnectorError).
        """
        ...


class Extractor(Protocol):
    """Turns one record's text (and structured fields) into claims."""

    def extract(self, record: SourceRecord, text: str) -> Sequence[ExtractedClaim]:
        """The claims found in the record; an empty list when there are none."""
        ...

    @property
    def version(self) -> str:
        """What reads the record, exactly enough that a change shows: the rules' version,
        the model and its prompt, the field mapping (episodes record it; reprocessing
        finds what an older version read)."""
        ...


class ObjectStore(Protocol):
    """Where raw artifact bytes live (a local folder, S3), addressed by key.

    A store that cannot serve a call raises ObjectStoreError (ObjectStoreUnavailable
    when it cannot serve anyone now), never its client library's own exceptions.
    """

    # Read-only: a decorator (ResilientObjectStore) passes its inner store's through.
    @property
    def backend(self) -> str:
        """Which kind of store this is ("local", "s3"), for the health check."""
        ...

    def put(self, key: str, data: bytes, *, content_type: str) -> None:
        """Store bytes under key (idempotent for identical bytes)."""

    def get(self, key: str) -> bytes:
        """The bytes under key; KeyError if absent."""
        ...

    def delete(self, key: str) -> None:
        """Remove key; absent keys are fine."""

    def ping(self) -> None:
        """Raise ObjectStoreUnavailable if the store cannot take bytes now."""


class Embedder(Protocol):
    """Text -> vectors of a fixed model and dimension."""

    # Read-only: a decorator (ResilientEmbedder) may pass its inner embedder's through.
    @property
    def model(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order."""
        ...


class EquivalenceJudge(Protocol):
    """Decides whether two entity names denote the same thing (synonym, abbreviation...)."""

    def same_entity(self, a: str, b: str, *, entity_type: str) -> bool:
        """True only when confident they are the same; a false merge is worse than a miss.

        Raises JudgeUnavailable when it cannot judge now, which is not a "no".
        """
        ...


class ContradictionJudge(Protocol):
    """Decides whether a new value of a multi-valued predicate replaces an older one."""

    def replaces(self, new_fact: str, old_fact: str) -> bool:
        """True when the new fact makes the old one no longer true.

        Raises JudgeUnavailable when it cannot judge now, which is not a "no".
        """
        ...
