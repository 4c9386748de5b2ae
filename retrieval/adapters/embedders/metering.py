"""Token and cost accounting for provider calls: embeddings (cache misses only), reranking
and chat models (the LLM extractor, judges and reranker, through `common.chat_json.UsageMeter`)."""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

logger = logging.getLogger(__name__)

# USD per one million input tokens (embedding and reranking models, which bill no output).
# Local models cost nothing per call.
PRICES_USD_PER_MTOK: Mapping[str, float] = {
    "text-embedding-3-small": 0.02,
    "voyage-3.5": 0.06,
    "voyage-4-lite": 0.02,
    "rerank-2.5": 0.05,
    "rerank-2.5-lite": 0.02,
    "all-MiniLM-L6-v2": 0.0,
    "multilingual-e5-small-q4": 0.0,  # local, like MiniLM
}
# USD per one million tokens of a chat model: (input, output), the providers' list prices.
# A dated snapshot of a model ("gpt-4o-mini-2024-07-18") is priced as the model.
CHAT_PRICES_USD_PER_MTOK: Mapping[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
    "o4-mini": (1.10, 4.40),
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
    texts: int = 0  # texts embedded or reranked (a chat request counts none)
    tokens: int = 0  # billed; a chat request's are its prompt's and its answer's
    estimated_tokens: int = 0  # the part of `tokens` guessed from characters
    cost_usd: float = 0.0


# Told of each recorded batch (provider, model, what it added): the exported metrics.
UsageListener = Callable[[str, str, Usage], None]


class Meter:
    """Counts provider calls, texts, tokens and cost per model; thread-safe.

    A model missing from the price tables is still counted, at zero cost, and logged
    once so that a new provider cannot be used unpriced without anyone noticing. The
    totals are this process's; `on_record` passes each batch on (to the metrics and the
    usage ledger, which add up over processes). It is the chat models' `UsageMeter` too.
    """

    def __init__(
        self,
        *,
        prices: Mapping[str, float] = PRICES_USD_PER_MTOK,
        chat_prices: Mapping[str, tuple[float, float]] = CHAT_PRICES_USD_PER_MTOK,
        on_record: UsageListener | None = None,
    ) -> None:
        self._prices = dict(prices)
        self._chat_prices = dict(chat_prices)
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

    def chat_price_per_mtok(self, model: str) -> tuple[float, float] | None:
        """USD per million (input, output) tokens of a chat model; None when unknown."""
        return chat_price(self._chat_prices, model)

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
        self._add(provider, model, added)
        return added

    def record_chat(
        self, *, provider: str, model: str, input_tokens: int, output_tokens: int
    ) -> None:
        """Add one chat model request: its prompt (input) and answer (output) tokens."""
        prices = self.chat_price_per_mtok(model)
        if prices is None:
            self._log_unpriced(model)
            prices = (0.0, 0.0)
        cost = (input_tokens * prices[0] + output_tokens * prices[1]) / 1_000_000
        self._add(
            provider, model, Usage(calls=1, tokens=input_tokens + output_tokens, cost_usd=cost)
        )

    def usage(self, model: str) -> Usage:
        """Totals for one model (zeros if it was never called)."""
        with self._lock:
            return self._usage.get(model, Usage())

    def snapshot(self) -> dict[str, Usage]:
        """Totals for every model called so far."""
        with self._lock:
            return dict(self._usage)

    def _add(self, provider: str, model: str, added: Usage) -> None:
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

    def _log_unpriced(self, model: str) -> None:
        with self._lock:
            if model in self._unpriced_logged:
                return
            self._unpriced_logged.add(model)
        logger.warning("provider model %r has no price; its calls are metered at $0", model)


def chat_price(prices: Mapping[str, tuple[float, float]], model: str) -> tuple[float, float] | None:
    """The (input, output) price of `model`, or of the model it is a dated snapshot of
    (the longest name it extends with "-"); None when the table knows neither."""
    if model in prices:
        return prices[model]
    extended = [name for name in prices if model.startswith(f"{name}-")]
    return prices[max(extended, key=len)] if extended else None
