"""The one rule for every name a person reads: scopes, sources, keys, snapshots and the
labels of predicates (pure).

A name is shown to reviewers and admins as it was typed, so it may not carry what
changes how it reads rather than what it says: control characters (NUL, BEL, line
breaks, tabs), format characters (the bidirectional overrides and isolates that reverse
the text after them, invisible marks such as U+200B or U+FEFF), line and paragraph
separators, surrogates, private-use and unassigned code points. The zero-width
non-joiner and joiner (U+200C, U+200D) are kept: Persian and Indic names and emoji
sequences need them.
"""

from __future__ import annotations

import unicodedata

_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_JOINERS = frozenset({"\u200c", "\u200d"})
RULE = "a name may not contain control, format or bidirectional-override characters"


def _unsafe(char: str) -> bool:
    return char not in _JOINERS and unicodedata.category(char) in _REFUSED_CATEGORIES


def name_refusal(name: str, *, field: str = "name") -> str:
    """Why `name` cannot be shown as a name ("" when it can), naming the first offending
    character and where it is: "name: a name may not contain ... (U+202E at 1)"."""
    for position, char in enumerate(name, start=1):
        if _unsafe(char):
            return f"{field}: {RULE} (U+{ord(char):04X} at {position})"
    return ""


def checked_name(name: str, *, field: str = "name") -> str:
    """`name` itself; ValueError with `name_refusal`'s message when it breaks the rule."""
    if refusal := name_refusal(name, field=field):
        raise ValueError(refusal)
    return name
