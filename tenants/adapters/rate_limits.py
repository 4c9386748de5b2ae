"""Sliding-window request counters in Redis, checked and incremented in one atomic script."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import redis

from tenants.domain.limits import Charge, Window, retry_after_s

# Every charge is checked before any is counted, in one script (Redis runs it atomically):
# a refused request costs no budget, and concurrent requests cannot both take the last
# place. KEYS: each charge's current then previous window counter. ARGV: the previous
# window's weight, the counters' lifetime, then each charge's limit. Returns, per charge,
# its current and previous counts (before this request) and 1 if it refused.
_SCRIPT = """
local weight = tonumber(ARGV[1])
local result, refused = {}, false
for i = 1, #KEYS / 2 do
    local current = tonumber(redis.call('GET', KEYS[2 * i - 1]) or '0')
    local previous = tonumber(redis.call('GET', KEYS[2 * i]) or '0')
    local over = previous * weight + current + 1 > tonumber(ARGV[2 + i])
    refused = refused or over
    table.insert(result, current)
    table.insert(result, previous)
    table.insert(result, over and 1 or 0)
end
if not refused then
    for i = 1, #KEYS / 2 do
        redis.call('INCR', KEYS[2 * i - 1])
        redis.call('EXPIRE', KEYS[2 * i - 1], tonumber(ARGV[2]))
    end
end
return result
"""
KEY_PREFIX = "vera:rate"


class RateLimiterUnavailable(Exception):
    """The counters could not be read or written (Redis down or too slow)."""


@dataclass(frozen=True)
class Refusal:
    """The charge that refused a request, and when one more request would fit."""

    charge: Charge
    retry_after_s: int


class RedisRateLimiter:
    """Counts requests against their charges; refuses when any charge is at its limit."""

    def __init__(self, client: redis.Redis) -> None:
        self._script = client.register_script(_SCRIPT)

    def hit(self, charges: Sequence[Charge], *, window: Window) -> Refusal | None:
        """Count one request against every charge, or none of them and say which refused."""
        keys: list[str] = []
        for charge in charges:
            keys += [
                f"{KEY_PREFIX}:{charge.key}:{window.number}",
                f"{KEY_PREFIX}:{charge.key}:{window.number - 1}",
            ]
        # The previous window must outlive the current one, which it weighs into.
        args: list[str | int] = [repr(window.previous_weight), 2 * window.length_s + 1]
        args += [charge.limit for charge in charges]
        try:
            counts = self._script(keys=keys, args=args)
        except redis.RedisError as error:
            raise RateLimiterUnavailable(f"{type(error).__name__}: {error}") from error
        refusals = [
            Refusal(
                charge,
                retry_after_s(
                    previous=int(counts[3 * i + 1]),
                    current=int(counts[3 * i]),
                    limit=charge.limit,
                    window=window,
                ),
            )
            for i, charge in enumerate(charges)
            if int(counts[3 * i + 2])
        ]
        return max(refusals, key=lambda refusal: refusal.retry_after_s, default=None)
