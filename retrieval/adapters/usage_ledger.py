"""Provider usage collected in Redis from every web and worker process, drained by beat."""

from __future__ import annotations

import datetime as dt
import json
import logging
import time
from collections.abc import Sequence

from django.utils import timezone
from redis import Redis, RedisError

from kernel.resilience import CircuitBreaker, CircuitOpen, Clock
from retrieval.adapters.embedders.metering import Usage
from retrieval.domain.usage import UsageTotal, charged_group
from tenants import rls

logger = logging.getLogger(__name__)

# Read and delete in one step, so a batch added meanwhile lands in the next drain.
_DRAIN = "local v = redis.call('HGETALL', KEYS[1]); redis.call('DEL', KEYS[1]); return v"
# Totals nobody drains (beat stopped) expire rather than grow without end.
KEEP_S = 7 * 24 * 3600


class RedisUsageLedger:
    """UsageLedger in one Redis hash: HINCRBY per batch, so no process keeps a remainder.

    A field is [group, day, provider, model, figure] as JSON. A web request adds one
    round trip per provider batch (cache misses only), never a database write; while
    Redis is down the batches are skipped with a warning (Prometheus still counts them)
    and Redis is left alone for `retry_after_s`, as the embedding cache does.
    """

    def __init__(
        self, client: Redis, *, key: str, retry_after_s: float = 30.0, clock: Clock = time.monotonic
    ) -> None:
        self._client = client
        self._key = key
        self._breaker = CircuitBreaker(
            failure_threshold=1, reset_after_s=retry_after_s, clock=clock, name="usage-ledger"
        )

    def record(self, provider: str, model: str, added: Usage) -> None:
        """The meter's listener: charge the batch to the group the work is for, today."""
        self.add(
            UsageTotal(
                group_id=charged_group(rls.usage_groups()), day=timezone.now().date(),
                provider=provider, model=model,
                calls=added.calls, tokens=added.tokens, cost_usd=added.cost_usd,
            )
        )  # fmt: skip

    def add(self, total: UsageTotal) -> None:
        try:
            with self._breaker.guard(failures=(RedisError,)):
                self._increment([total])
        except CircuitOpen:
            return
        except RedisError as error:
            logger.warning("provider usage not recorded (Redis): %s", error)

    def drain(self) -> list[UsageTotal]:
        raw = self._client.eval(_DRAIN, 1, self._key)
        figures: dict[tuple[str, str, str, str], dict[str, float]] = {}
        for field, value in zip(raw[::2], raw[1::2], strict=True):
            group_id, day, provider, model, figure = json.loads(field)
            figures.setdefault((group_id, day, provider, model), {})[figure] = float(value)
        return [
            UsageTotal(
                group_id=group_id,
                day=dt.date.fromisoformat(day),
                provider=provider,
                model=model,
                calls=int(values.get("calls", 0)),
                tokens=int(values.get("tokens", 0)),
                cost_usd=values.get("cost_usd", 0.0),
            )
            for (group_id, day, provider, model), values in sorted(figures.items())
        ]

    def restore(self, totals: Sequence[UsageTotal]) -> None:
        self._increment(totals)

    def _increment(self, totals: Sequence[UsageTotal]) -> None:
        with self._client.pipeline(transaction=False) as pipe:
            for total in totals:
                base = [total.group_id, total.day.isoformat(), total.provider, total.model]
                pipe.hincrby(self._key, json.dumps([*base, "calls"]), total.calls)
                pipe.hincrby(self._key, json.dumps([*base, "tokens"]), total.tokens)
                pipe.hincrbyfloat(self._key, json.dumps([*base, "cost_usd"]), total.cost_usd)
            pipe.expire(self._key, KEEP_S)
            pipe.execute()
