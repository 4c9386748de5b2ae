"""An embedder decorator with an in-process LRU+TTL cache, optionally backed by Redis."""

from __future__ import annotations

import hashlib
import logging
import struct
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence

from redis import Redis, RedisError

from curation.ports import Embedder
from kernel.resilience import CircuitBreaker, CircuitOpen, Clock
from retrieval.adapters.embedders.base import checked, embed_with_usage
from retrieval.adapters.embedders.metering import Meter

logger = logging.getLogger(__name__)


class _LruTtl:
    """Packed vectors by key, least recently used evicted first, each expiring after ttl_s."""

    def __init__(self, *, size: int, ttl_s: float, clock: Clock) -> None:
        self._size = size
        self._ttl_s = ttl_s
        self._clock = clock
        self._entries: OrderedDict[str, tuple[float, bytes]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> bytes | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            expires_at, packed = entry
            if self._clock() >= expires_at:
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
            return packed

    def put(self, key: str, packed: bytes) -> None:
        if self._size <= 0:
            return
        with self._lock:
            self._entries[key] = (self._clock() + self._ttl_s, packed)
            self._entries.move_to_end(key)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)

    def drop(self, key: str) -> None:
        with self._lock:
            self._entries.pop(key, None)


class CachedEmbedder:
    """Embedder port that asks its inner embedder only for texts it has not seen lately.

    Lookups go LRU, then Redis (keys `emb:{model}:{dim}:{sha256(text)}`, values the
    vector as little-endian float32, with a TTL), then the provider; what the provider
    returns is written to both. Only provider calls are metered, so hits cost nothing.
    Vectors are rounded to float32 (pgvector's precision) on every path, so a text gets
    the same vector from a hit as from the miss that filled it. Redis being down only
    costs a warning and a provider call: the cache never fails an embedding, and after
    a Redis error it leaves Redis alone for `redis_retry_after_s` rather than making
    every embedding wait for the client's connection retries.
    """

    def __init__(
        self,
        inner: Embedder,
        *,
        lru_size: int = 10_000,
        ttl_s: float = 7 * 24 * 3600,
        redis: Redis | None = None,
        meter: Meter | None = None,
        clock: Clock = time.monotonic,
        redis_retry_after_s: float = 30.0,
    ) -> None:
        if ttl_s <= 0:
            raise ValueError("ttl_s must be positive")
        if redis is not None and redis.connection_pool.connection_kwargs.get("decode_responses"):
            raise ValueError(
                "the embedding cache stores bytes: pass a client without decode_responses"
            )
        self.inner = inner
        self.model = inner.model
        self.dimension = inner.dimension
        # None: any language (or unknown); an English-only model says {"en"}.
        self.languages: frozenset[str] | None = getattr(inner, "languages", None)
        self.meter = meter
        # The metered provider: the adapter under the resilience wrapper, if there is one.
        self.provider: str = getattr(inner, "provider", type(inner).__name__)
        self._redis = redis
        self._redis_breaker = CircuitBreaker(
            failure_threshold=1, reset_after_s=redis_retry_after_s, clock=clock, name="redis"
        )
        self._ttl_ms = max(round(ttl_s * 1000), 1)
        self._lru = _LruTtl(size=lru_size, ttl_s=ttl_s, clock=clock)
        self._codec = struct.Struct(f"<{inner.dimension}f")
        variant: str | None = getattr(inner, "cache_variant", None)
        # A variant (Voyage's query/document) embeds the same text differently.
        self._prefix = f"emb:{inner.model}:{inner.dimension}:" + (f"{variant}:" if variant else "")

    def key(self, text: str) -> str:
        """The cache key of `text` for this model and dimension."""
        return self._prefix + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    def forget(self, keys: Sequence[str]) -> None:
        """Remove these keys from this process's cache and from Redis (an erasure).

        Unlike a read, a Redis failure is raised, not skipped: the caller (the erasure's
        cleanup) must know the keys are not gone, and retries.
        """
        for key in keys:
            self._lru.drop(key)
        if self._redis is not None and keys:
            for start in range(0, len(keys), 500):
                self._redis.delete(*keys[start : start + 500])

    def holds(self, keys: Sequence[str]) -> list[str]:
        """Which of these keys Redis (or this process) still holds (a residual scan)."""
        found = [key for key in keys if self._lru.get(key) is not None]
        if self._redis is not None:
            for key in keys:
                if key not in found and self._redis.exists(key):
                    found.append(key)
        return found

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        keys = {text: self.key(text) for text in texts}
        found: dict[str, bytes] = {}
        for text, key in keys.items():
            packed = self._lru.get(key)
            if packed is not None:
                found[text] = packed
        missing = [text for text in keys if text not in found]
        if missing and self._redis is not None:
            from_redis = self._redis_get(self._redis, {text: keys[text] for text in missing})
            for text, packed in from_redis.items():
                self._lru.put(keys[text], packed)
            found |= from_redis
            missing = [text for text in missing if text not in found]
        if missing:
            fresh = self._from_provider(missing)
            for text, packed in fresh.items():
                self._lru.put(keys[text], packed)
            self._redis_set({keys[text]: packed for text, packed in fresh.items()})
            found |= fresh
        return [list(self._codec.unpack(found[text])) for text in texts]

    def _from_provider(self, texts: list[str]) -> dict[str, bytes]:
        result = embed_with_usage(self.inner, texts)
        vectors = checked(
            result.vectors, expected=len(texts), dimension=self.dimension, provider=self.model
        )
        if self.meter is not None:
            self.meter.record(
                provider=self.provider,
                model=self.model,
                texts=texts,
                tokens=result.tokens,
                calls=result.calls,
            )
        return {
            text: self._codec.pack(*vector) for text, vector in zip(texts, vectors, strict=True)
        }

    def _redis_get(self, client: Redis, keys: dict[str, str]) -> dict[str, bytes]:
        try:
            with self._redis_breaker.guard(failures=(RedisError,)):
                values = client.mget(list(keys.values()))
        except CircuitOpen:
            return {}
        except RedisError as error:
            logger.warning("embedding cache read failed, asking the provider: %s", error)
            return {}
        return {
            text: value
            for text, value in zip(keys, values, strict=True)
            if isinstance(value, bytes) and len(value) == self._codec.size
        }

    def _redis_set(self, entries: dict[str, bytes]) -> None:
        if self._redis is None or not entries:
            return
        try:
            with (
                self._redis_breaker.guard(failures=(RedisError,)),
                self._redis.pipeline(transaction=False) as pipe,
            ):
                for key, packed in entries.items():
                    pipe.set(key, packed, px=self._ttl_ms)
                pipe.execute()
        except CircuitOpen:
            return
        except RedisError as error:
            logger.warning("embedding cache write failed: %s", error)
