"""Search: the orchestration (`pipeline`), its SQL (`sql`) and the stopwatch (`timing`).

The request and result types are pure values in `retrieval.domain` (`query`, `results`);
the names entrypoints, tests and benches use are re-exported here (with the vote,
`retrieval.services.feedback.feedback_record`, which lived beside search before).
"""

from retrieval.domain.query import MAX_QUERY_CHARS, Query
from retrieval.domain.results import Hit, Result, Stage3
from retrieval.services.feedback import feedback_record
from retrieval.services.search.pipeline import (
    STAGE1_DEPTH,
    Lists,
    fuse,
    search,
    stage1,
    stage1_lists,
)
from retrieval.services.search.sql import lexical_scores
from retrieval.services.search.timing import Stopwatch, server_timing

__all__ = [
    "MAX_QUERY_CHARS",
    "STAGE1_DEPTH",
    "Hit",
    "Lists",
    "Query",
    "Result",
    "Stage3",
    "Stopwatch",
    "feedback_record",
    "fuse",
    "lexical_scores",
    "search",
    "server_timing",
    "stage1",
    "stage1_lists",
]
