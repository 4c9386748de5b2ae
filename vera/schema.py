"""The OpenAPI schema's generator: drf-spectacular's, plus the 429 of rate-limited operations.

Apart from `vera.api`: drf-spectacular imports DRF's generic views, which load the
pagination class from `vera.api` as they are defined.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular import openapi
from drf_spectacular.utils import Direction

from .throttling import RateLimitThrottle

THROTTLED = {
    "description": "A rate limit ran out (the message names it); retry after Retry-After.",
    "headers": {
        "Retry-After": {
            "description": "whole seconds until one more request fits",
            "schema": {"type": "integer", "minimum": 1},
        }
    },
    "content": {
        "application/json": {
            "schema": {
                "type": "object",
                "properties": {"detail": {"type": "string"}},
                "required": ["detail"],
            }
        }
    },
}


class AutoSchema(openapi.AutoSchema):
    """drf-spectacular's schema, plus the 429 of each operation a rate limit applies to."""

    def _get_response_bodies(self, direction: Direction = "response") -> dict[str, Any]:
        responses: dict[str, Any] = super()._get_response_bodies(direction)
        limited = any(
            isinstance(throttle, RateLimitThrottle)
            and throttle.budget(self.view, self.method) is not None
            for throttle in self.view.get_throttles()
        )
        if limited and direction == "response":
            responses.setdefault("429", THROTTLED)
        return responses
