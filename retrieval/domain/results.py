"""What a search returns: its ranked hits and how each stage went (pure values)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from enum import StrEnum

from retrieval.domain.understanding import Understanding


@dataclass(frozen=True)
class Hit:
    """One ranked, cited result."""

    hit_id: int | None  # None when the search was not recorded (golden-set evaluation)
    claim_id: int
    score: float
    signals: dict[str, float]
    stage1: dict[str, int | None] = field(default_factory=dict)
    rerank: float | None = None  # the cross-encoder's score, when stage 3 read this hit
    weight_version: int = 0  # the weight set that blended it (0: the built-in default)


class Stage3(StrEnum):
    """What the optional cross-encoder did for a search."""

    OFF = "off"  # not configured
    APPLIED = "applied"
    UNAVAILABLE = "unavailable"  # configured but failed: the stage-2 order was returned


@dataclass(frozen=True)
class Result:
    """A search's hits, best first, with the id they were logged under."""

    query_id: uuid.UUID
    hits: list[Hit]
    stage3: Stage3 = Stage3.OFF
    timings: dict[str, float] = field(default_factory=dict)  # ms per step
    degraded: tuple[str, ...] = ()  # stage-1 halves that could not run ("vector")
    # Per workspace with a hit: (weight-set version, set id or None for the default).
    weights: dict[str, tuple[int, int | None]] = field(default_factory=dict)
    understood: Understanding = field(default_factory=Understanding)  # what the question said
