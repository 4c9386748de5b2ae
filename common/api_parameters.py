"""Query parameters in the OpenAPI schema with the bounds their parsers enforce.

`kernel.params.ParamReader` reads query strings; each helper here documents one kind of
value with the same limits (ids up to MAX_ID, integers in the range the reader is given,
instants with a time zone), so a request the schema allows is one the parser accepts,
and the other way round. Every app's API views use them.
"""

from __future__ import annotations

from collections.abc import Iterable

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter

from kernel.params import MAX_ID


def integer(name: str, *, low: int, high: int, description: str) -> OpenApiParameter:
    """An integer parameter read by `ParamReader.integer(name, low=low, high=high)`."""
    return OpenApiParameter(
        name, {"type": "integer", "minimum": low, "maximum": high}, description=description
    )


def record_id(name: str, *, description: str) -> OpenApiParameter:
    """An id (1..MAX_ID): larger values are no record, and are refused as such."""
    return integer(name, low=1, high=MAX_ID, description=description)


def instant(name: str = "as_of", *, description: str) -> OpenApiParameter:
    """An instant read by `ParamReader.instant`: ISO 8601 with its time zone."""
    return OpenApiParameter(name, OpenApiTypes.DATETIME, description=description)


def choice(name: str, choices: Iterable[str], *, description: str) -> OpenApiParameter:
    """One of `choices`, read by `ParamReader.choice`."""
    return OpenApiParameter(name, str, enum=sorted(choices), description=description)


def text(name: str, *, description: str) -> OpenApiParameter:
    """Free text read by `ParamReader.text`: a blank value is no value."""
    return OpenApiParameter(name, str, description=description)
