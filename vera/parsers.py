"""The API's JSON parser: DRF's, with nesting bounded so a deep body is a 400, not a 500."""

from __future__ import annotations

import codecs
from collections.abc import Mapping
from typing import IO, Any

from rest_framework import parsers
from rest_framework.exceptions import ParseError
from rest_framework.utils import json

from kernel.jsonbounds import JSONTooDeep, loads_bounded

# No request body the API takes nests anywhere near this deep.
MAX_DEPTH = 64


class BoundedJSONParser(parsers.JSONParser):
    """DRF's JSONParser (charset checks, NaN and Infinity refused when strict), but a body
    nested deeper than MAX_DEPTH is refused by name instead of exhausting the stack."""

    def parse(
        self,
        stream: IO[Any],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        # DRF's charset check (text codecs only, so no bz2 bomb); newer than its stubs.
        encoding = parsers.get_encoding(parser_context or {})  # type: ignore[attr-defined]
        parse_constant = json.strict_constant if self.strict else None
        try:
            text = codecs.getreader(encoding)(stream).read()
            return loads_bounded(text, max_depth=MAX_DEPTH, parse_constant=parse_constant)
        except JSONTooDeep as exc:
            raise ParseError(str(exc)) from None
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
