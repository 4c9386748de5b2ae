"""Entity names: the one key exact and fuzzy matching compare, and what tells names apart.

Accents are kept on purpose (the spec's "Multilingual Knowledge"): "Hà Nội" and
"Ha Noi" are different strings to a reader of Vietnamese, so they stay different
keys here and only a later, explicit resolution step may decide they are one entity.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass

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


# --- identifier-like differences ------------------------------------------------------

# Words that never tell two names apart ("The Payments API" is "Payments API"), and
# conjunctions, which only do at the edges ("Team E"): "Antigua and Barbuda" is
# "Antigua y Barbuda" and "Antigua und Barbuda".
_FILLERS = frozenset({"the", "of"})
_CONJUNCTIONS = frozenset({"and", "&", "und", "y", "e", "et", "và"})
# Symbols that are part of a name's identity: C, C# and C++ are three languages.
_NAME_SYMBOLS = frozenset("#&@%*+$")
# A differing token this short is a code (eu/us, db/dc, ii/iii), never a typo.
_CODE_MAX = 3
# Typos are tolerated only in words at least this long: one edit, two in long words.
_TYPO_MIN = 5
_TYPO_TWO_EDITS_MIN = 9


@dataclass(frozen=True)
class NameConflict:
    """What tells two names apart: kind is number | code | symbol | word | extra | order,
    identity (two different ids in one source: told apart by the source itself), or
    spelling (a name spelt otherwise than a structured source's record)."""

    kind: str
    detail: str

    @property
    def sibling(self) -> bool:
        """A number, a short code or a symbol differs: the mark of siblings (db-01 / db-02)."""
        return self.kind in {"number", "code", "symbol"}

    def __str__(self) -> str:
        if self.kind == "extra":
            return f"extra word: {self.detail}"
        if self.kind == "order":
            return f"same words in another order: {self.detail}"
        return f"different {self.kind}: {self.detail}"


def identifier_conflict(a: str, b: str) -> NameConflict | None:
    """What makes `a` and `b` two different identifiers, or None when one may be a variant.

    Names that differ in a number or a short code (prod-eu-1 / prod-eu-3, db-01 / db-02,
    payments-v1 / payments-v2, prod-eu / prod-us), or that share words and differ by
    another word (Samoa / American Samoa, us-east / us-west), are different things far
    more often than misspellings, however alike they look to a trigram or an embedding.
    Not differences: case, punctuation, spacing, word order, "the", a small typo in a
    long word (Postgress / Postgres). Names without a word in common (auth service /
    login gateway) are not identifier-like either: they are left to similarity and
    judgement. Symmetric: (a, b) and (b, a) get the same answer.
    """
    first, second = sorted((normalize_name(a), normalize_name(b)))
    if first == second:
        return None
    tokens_a, tokens_b = _tokens(first), _tokens(second)
    numbers_a, numbers_b = _numbers(tokens_a), _numbers(tokens_b)
    if numbers_a != numbers_b:
        return NameConflict("number", f"{_joined(numbers_a)} / {_joined(numbers_b)}")
    words_a, words_b = _words(tokens_a), _words(tokens_b)
    if "".join(words_a) == "".join(words_b):
        return None  # spacing or punctuation only: "payments api" / "paymentsapi"
    only_a, only_b = _unpaired(words_a, words_b)
    if len(only_a) == len(words_a) and len(only_b) == len(words_b):
        return None  # nothing in common: a synonym or a translation, if anything
    if only_a and only_b:
        x, y = only_a[0], only_b[0]
        return NameConflict(_kind(x, y), f"{x} / {y}")
    if only_a or only_b:
        extra = (only_a or only_b)[0]
        if _char_kind(extra[0]) == "symbol":
            return NameConflict("symbol", f"{extra} / none")
        return NameConflict("extra", extra)
    return None


def spelling_conflict(a: str, b: str) -> NameConflict | None:
    """Whether `a` and `b` are spelt differently beyond case, punctuation, spacing and
    fillers ("metric-queue" / "metrics-queue", "billng-api" / "billing-api"), or None.

    A structured source names its records exactly: a name spelt otherwise than one of them
    may be a typo or a sibling record the source has not sent yet, so it is at most a
    merge candidate for that record, never linked to it automatically. Symmetric.
    """
    first, second = sorted((normalize_name(a), normalize_name(b)))
    tokens_a, tokens_b = _tokens(first), _tokens(second)
    words_a, words_b = "".join(_words(tokens_a)), "".join(_words(tokens_b))
    if _numbers(tokens_a) == _numbers(tokens_b) and words_a == words_b:
        return None
    return NameConflict("spelling", f"{first} / {second}")


# What separates the words of a name for the word-order rule: dashes, underscores, dots
# and whitespace ("stock-notify-queue", "stock_notify.queue", "Stock Notify Queue").
_WORD_BREAK = re.compile(r"[-_.\s]+")


def word_order_conflict(a: str, b: str) -> NameConflict | None:
    """The same words in another order, or None: such names are never linked automatically.

    "stock-notify-queue" and "notify-stock-queue" are as close as can be to a trigram or an
    embedding, and in an estate named by convention they are two queues. Words are split
    on dashes, underscores, dots and whitespace and case-folded; the same words in the same
    order ("Billing API" / "billing-api") and different words are not this rule's concern.
    At most a reviewer merges such a pair. Symmetric.
    """
    words_a, words_b = _plain_words(a), _plain_words(b)
    if words_a == words_b or sorted(words_a) != sorted(words_b):
        return None
    first, second = sorted((" ".join(words_a), " ".join(words_b)))
    return NameConflict("order", f"{first} / {second}")


def _plain_words(name: str) -> list[str]:
    return [word for word in _WORD_BREAK.split(normalize_name(name)) if word]


def _char_kind(char: str) -> str | None:
    category = unicodedata.category(char)
    if category == "Nd":
        return "digit"
    if category[0] in "LM":
        return "letter"
    if char in _NAME_SYMBOLS or category in ("Sm", "Sc", "So"):
        return "symbol"
    return None  # a separator: space, dash, dot, slash, quote...


def _tokens(norm: str) -> list[str]:
    """Letter runs, digit runs and single name symbols, in order ("k8s-prod-1" -> k 8 s prod 1)."""
    tokens: list[str] = []
    previous: str | None = None
    for char in norm:
        kind = _char_kind(char)
        if kind is not None and kind == previous and kind != "symbol":
            tokens[-1] += char
        elif kind is not None:
            tokens.append(char)
        previous = kind
    return tokens


def _numbers(tokens: list[str]) -> list[str]:
    """The digit runs by value, leading zeros kept (db-01 is not db-1), any script's digits."""
    return [
        "".join(str(unicodedata.decimal(c)) for c in token)
        for token in tokens
        if unicodedata.category(token[0]) == "Nd"
    ]


def _joined(numbers: list[str]) -> str:
    return "-".join(numbers) or "none"


def _words(tokens: list[str]) -> list[str]:
    words = [t for t in tokens if unicodedata.category(t[0]) != "Nd"]
    last = len(words) - 1
    meaningful = [
        word
        for index, word in enumerate(words)
        if word not in _FILLERS and not (word in _CONJUNCTIONS and 0 < index < last)
    ]
    return meaningful or words


def _unpaired(words_a: list[str], words_b: list[str]) -> tuple[list[str], list[str]]:
    """The words of each side left over once equal words and typo pairs are matched."""
    only_a = list((Counter(words_a) - Counter(words_b)).elements())
    only_b = list((Counter(words_b) - Counter(words_a)).elements())
    for word in list(only_a):
        partner = next((other for other in only_b if _is_typo(word, other)), None)
        if partner is not None:
            only_a.remove(word)
            only_b.remove(partner)
    return only_a, only_b


def _kind(x: str, y: str) -> str:
    if _char_kind(x[0]) == "symbol" or _char_kind(y[0]) == "symbol":
        return "symbol"
    short = min(len(x), len(y)) <= _CODE_MAX and x.isascii() and y.isascii()
    return "code" if short else "word"


def _is_typo(x: str, y: str) -> bool:
    shorter = min(len(x), len(y))
    if shorter < _TYPO_MIN or _char_kind(x[0]) == "symbol" or _char_kind(y[0]) == "symbol":
        return False
    allowed = 2 if shorter >= _TYPO_TWO_EDITS_MIN else 1
    return _edits(x, y, allowed) <= allowed


def _edits(x: str, y: str, limit: int) -> int:
    """Optimal-string-alignment distance (a swap of neighbours is one edit), capped past limit."""
    if abs(len(x) - len(y)) > limit:
        return limit + 1
    before: list[int] = []
    row = list(range(len(y) + 1))
    for i in range(1, len(x) + 1):
        current = [i] + [0] * len(y)
        for j in range(1, len(y) + 1):
            cost = 0 if x[i - 1] == y[j - 1] else 1
            current[j] = min(row[j] + 1, current[j - 1] + 1, row[j - 1] + cost)
            if i > 1 and j > 1 and x[i - 1] == y[j - 2] and x[i - 2] == y[j - 1]:
                current[j] = min(current[j], before[j - 2] + 1)
        if min(current) > limit:
            return limit + 1
        before, row = row, current
    return row[-1]
