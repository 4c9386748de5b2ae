"""Entity-name normalisation: the one key that exact and fuzzy entity matching compare.

Accents are kept on purpose (the spec's "Multilingual Knowledge"): "Hà Nội" and
"Ha Noi" are different strings to a reader of Vietnamese, so they stay different
keys here and only a later, explicit resolution step may decide they are one entity.
"""

from __future__ import annotations

import unicodedata

# Functional predicates hold one value at a time: a new value supersedes every earlier one.
DEFAULT_FUNCTIONAL_PREDICATES = frozenset(
    {
        "RUNS_ON",
        "OWNED_BY",
        "HOSTED_IN",
        "DEPLOYED_TO",
        "MAINTAINED_BY",
        "WRITTEN_IN",
        "PART_OF",
        "HAS_STATUS",
        "ASSIGNED_TO",
    }
)

# Invisible characters that only ever separate or pad a name; ZWJ/ZWNJ are kept because
# they change how Indic and Arabic-script names are written.
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u2060\ufeff\u00ad"), None)
# Trimmed from either end: quotes, sentence punctuation, Markdown emphasis and bullets
# (besides every dash and typographic quote, see _is_edge_trimmed).
_EDGE_TRIM = frozenset("\"'`*_~,;:!?\u00a1\u00bf\u00b7\u2022|\u3001\u3002")
_OPENERS = {"(": ")", "[": "]", "{": "}", "<": ">", "\u3010": "\u3011", "\u300a": "\u300b"}
_CLOSERS = {close: open_ for open_, close in _OPENERS.items()}
_MAX_ROUNDS = 8


def normalize_name(name: str) -> str:
    """The matching key of a name: NFKC, case-folded, accents kept, whitespace collapsed.

    Leading and trailing whitespace, quotes, brackets that wrap the whole name or are
    unbalanced, and sentence punctuation are trimmed; everything inside the name is kept
    (`billing-api`, `payments_service`, `Node.js`, `C#`, `C++` keep their punctuation).
    A leading dot followed by a letter is kept (`.NET`). `str.casefold` is Unicode
    full case folding without a locale, so German "ß" becomes "ss" ("Straße" matches
    "STRASSE") and Turkish dotless i (U+0131) stays distinct from "i".
    """
    current = name
    for _ in range(_MAX_ROUNDS):  # each round only shrinks or canonicalises; a fixed point
        following = _normalize_once(current)
        if following == current:
            break
        current = following
    return current


def _normalize_once(name: str) -> str:
    text = unicodedata.normalize("NFKC", name.translate(_INVISIBLE))
    text = unicodedata.normalize("NFKC", text.casefold())
    text = " ".join("".join(" " if unicodedata.category(c) == "Cc" else c for c in text).split())
    return _trim_edges(text)


def _trim_edges(text: str) -> str:
    while True:
        trimmed = _trim_edges_once(text.strip())
        if trimmed == text:
            return text
        text = trimmed


def _trim_edges_once(text: str) -> str:
    if not text:
        return text
    first, last = text[0], text[-1]
    if _is_edge_trimmed(last) or last == "." or last in _OPENERS:
        return text[:-1]
    if _is_edge_trimmed(first) or first in _CLOSERS:
        return text[1:]
    if first == "." and not (len(text) > 1 and text[1].isalnum()):
        return text[1:]
    if first in _OPENERS and _closing_index(text, 0) in (len(text) - 1, None):
        return text[1:]  # wraps the whole name, or is never closed
    if last in _CLOSERS and _opening_index(text, len(text) - 1) is None:
        return text[:-1]  # closes nothing inside the name
    return text


def _is_edge_trimmed(char: str) -> bool:
    if char in _EDGE_TRIM:
        return True
    category = unicodedata.category(char)
    # Dashes and quotes always; other bracket kinds (corner brackets...) act as quotes.
    return category in ("Pd", "Pi", "Pf") or (
        category in ("Ps", "Pe") and char not in _OPENERS and char not in _CLOSERS
    )


def _closing_index(text: str, start: int) -> int | None:
    """Where the bracket opened at `start` is closed, or None when it never is."""
    opener, closer, depth = text[start], _OPENERS[text[start]], 0
    for index in range(start, len(text)):
        if text[index] == opener:
            depth += 1
        elif text[index] == closer:
            depth -= 1
            if depth == 0:
                return index
    return None


def _opening_index(text: str, end: int) -> int | None:
    """Where the bracket closed at `end` was opened, or None when it never was."""
    closer, opener, depth = text[end], _CLOSERS[text[end]], 0
    for index in range(end, -1, -1):
        if text[index] == closer:
            depth += 1
        elif text[index] == opener:
            depth -= 1
            if depth == 0:
                return index
    return None
