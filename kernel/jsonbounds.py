"""JSON parsing with a bound on nesting, so a deep document is a clear error, not a crash.

`json.loads` recurses once per level: a body of a few thousand `[` raises RecursionError,
which no caller expects from a parser and which a web server answers with a 500. Here
the depth is measured first by a linear scan that does not recurse (brackets inside
strings, escaped quotes included, do not count), and a document deeper than the bound is
refused with `JSONTooDeep`, a ValueError, as any other malformed document is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

DEFAULT_MAX_DEPTH = 64
# What the scan stops at outside a string: the brackets it counts and a string's start.
_STRUCTURE = re.compile(r'["\[\]{}]')


class JSONTooDeep(ValueError):
    """A document nested deeper than the parser allows."""

    def __init__(self, max_depth: int, message: str = "") -> None:
        super().__init__(message or f"JSON nested deeper than {max_depth} levels")
        self.max_depth = max_depth


def loads_bounded(
    document: str | bytes | bytearray,
    *,
    max_depth: int = DEFAULT_MAX_DEPTH,
    parse_constant: Callable[[str], Any] | None = None,
) -> Any:
    """`json.loads`, but JSONTooDeep for a document nested deeper than `max_depth`."""
    text = _text(document)
    if nesting_exceeds(text, max_depth=max_depth):
        raise JSONTooDeep(max_depth)
    try:
        return json.loads(text, parse_constant=parse_constant)
    except RecursionError:  # a bound past what the stack holds: refused all the same
        raise JSONTooDeep(max_depth, "JSON nested too deeply to parse") from None


def _text(document: str | bytes | bytearray) -> str:
    """The document as text, decoded as `json.loads` decodes bytes (UTF-8, -16 or -32)."""
    if isinstance(document, str):
        return document
    data = bytes(document)
    return data.decode(json.detect_encoding(data), "surrogatepass")


def nesting_exceeds(text: str, *, max_depth: int) -> bool:
    """Whether arrays and objects in `text` open more than `max_depth` deep; no recursion."""
    if text.count("[") + text.count("{") <= max_depth:
        return False  # too few brackets to be too deep: skip the scan
    depth, position = 0, 0
    while match := _STRUCTURE.search(text, position):
        bracket, position = match.group(), match.end()
        if bracket == '"':
            position = _string_end(text, position)
        elif bracket in "[{":
            depth += 1
            if depth > max_depth:
                return True
        else:
            depth = max(depth - 1, 0)
    return False


def _string_end(text: str, start: int) -> int:
    """The position after the quote closing the string whose contents begin at `start`."""
    position = start
    while (quote := text.find('"', position)) != -1:
        run = text[position:quote]
        if (len(run) - len(run.rstrip("\\"))) % 2 == 0:  # an even run escapes itself
            return quote + 1
        position = quote + 1
    return len(text)  # unterminated: json.loads will say so
