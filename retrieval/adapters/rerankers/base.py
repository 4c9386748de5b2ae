"""What the reranker adapters share: score checks and error descriptions that leak nothing."""

from __future__ import annotations

import math
from typing import Any

from retrieval.ports import RerankerError


def unit_score(value: Any, *, clamp: bool, provider: str, position: int) -> float:
    """A relevance as a float in [0, 1]; RerankerError if it is not a finite number.

    With `clamp`, a score slightly outside [0, 1] is brought back into it; without, it
    is an error (the model answered on some other scale).
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RerankerError(
            f"{provider} scored document {position} with a {type(value).__name__}, not a number"
        )
    score = float(value)
    if not math.isfinite(score):
        raise RerankerError(f"{provider} scored document {position} with {score}")
    if clamp:
        return min(1.0, max(0.0, score))
    if not 0.0 <= score <= 1.0:
        raise RerankerError(f"{provider} scored document {position} {score}, outside 0..1")
    return score


def described(error: BaseException) -> str:
    """The error's class and HTTP status only: SDK messages can echo request details."""
    status = getattr(error, "status_code", None) or getattr(error, "http_status", None)
    return type(error).__name__ + (f" (HTTP {status})" if status else "")
