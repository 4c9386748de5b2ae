"""Token and cost accounting for embedding provider calls (cache misses only)."""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

logger = logging.getLogger(__name__)

# USD per one million input tokens. Local models cost nothing per call.
PRICES_USD_PER_MTOK: Mapping[str, float] = {
    "text-embedding-3-small": 0.02,
    "voyage-3.5": 0.06,
    "voyage-4-lite": 0.02,
    "all-MiniLM-L6-v2": 0.0,
    "multilingual-e5-small-q4": 0.0,  # local, like MiniLM
}
# Models computed on this machine whatever their size suffix (hashing-v1-256, ...).
LOCAL_MODEL_PREFIXES = ("hashing-",)

CHARS_PER_TOKEN = 4  # the usual rule of thumb for English with BPE tokenizers


def estimate_tokens(texts: Sequence[str]) -> int:
    """Tokens a provider would likely bill for `texts`: about one per four characters."""
    return sum(max(math.ceil(len(text) / CHARS_PER_TOKEN), 1) for text in texts)


@dataclass(frozen=True)
class Usage:
    """What one model's provider calls added up to."""

    calls: int = 0
    texts: int = 0
    tokens: int = 0
    estimated_tokens: int = 0  # the part of `tokens` guessed from characters
    cost_usd: float = 0.0


# Told of each recorded batch (provider, model, what it added): the exported metrics.
UsageListener = Callable[[str, str, Usage], None]


class Meter:
    """Counts provider calls, texts, tokens and cost per model; thread-safe.

    A model missing from the price table is still counted, at zero cost, and logged
    once so that a new provider cannot be used unpriced without anyone noticing. The
    totals are this process's; `on_record` passes each batch on (to the metrics, which
    add up over processes).
    """

    def __init__(
        self,
        *,
        prices: Mapping[str, float] = PRICES_USD_PER_MTOK,
        on_record: UsageListener | None = None,
    ) -> None:
        self._prices = dict(prices)
        self._on_record = on_record
        self._usage: dict[str, Usage] = {}
        self._unpriced_logged: set[str] = set()
        self._lock = threading.Lock()

    def price_per_mtok(self, model: str) -> float | None:
        """USD per million tokens for `model`; None when the table does not know it."""
        if model in self._prices:
            return self._prices[model]
        if model.startswith(LOCAL_MODEL_PREFIXES):
            return 0.0
        return None

    def record(
        self, *, provider: str, model: str, texts: Sequence[str], tokens: int | None, calls: int
    ) -> Usage:
        """Add one batch of provider work; `tokens=None` estimates them from characters."""
        estimated = estimate_tokens(texts) if tokens is None else 0
        billed = tokens if tokens is not None else estimated
        price = self.price_per_mtok(model)
        if price is None:
            self._log_unpriced(model)
            price = 0.0
        added = Usage(
            calls=calls,
            texts=len(texts),
            tokens=billed,
            estimated_tokens=estimated,
            cost_usd=billed * price / 1_000_000,
        )
        with self._lock:
            before = self._usage.get(model, Usage())
            self._usage[model] = replace(
                before,
                calls=before.calls + added.calls,
                texts=before.texts + added.texts,
                tokens=before.tokens + added.tokens,
                estimated_tokens=before.estimated_tokens + added.estimated_tokens,
                cost_usd=before.cost_usd + added.cost_usd,
            )
        if self._on_record is not None:
            self._on_record(provider, model, added)
        return added

    def usage(self, model: str) -> Usage:
        """Totals for one model (zeros if it was never called)."""
        with self._lock:
            return self._usage.get(model, Usage())

    def snapshot(self) -> dict[str, Usage]:
        """Totals for every model called so far."""
        with self._lock:
            return dict(self._usage)

    def _log_unpriced(self, model: str) -> None:
        with self._lock:
            if model in self._unpriced_logged:
                return
            self._unpriced_logged.add(model)
        logger.warning("embedding model %r has no price; its calls are metered at $0", model)
