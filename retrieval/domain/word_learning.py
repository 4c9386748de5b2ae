"""Question words learnt from votes: which words people use for which relation (pure).

A vote on a hit says whether the fact answered the question. Over many votes, a word a
workspace's people keep using in questions whose helpful answer is a fact of one
predicate ("who is X's *boss*" answered by REPORTS_TO) is a word of that predicate in
this workspace, though no ontology entry lists it. These rules count, per (word,
predicate), the distinct questions that used the word and found a helpful fact of the
predicate, and the unhelpful ones; a word is suggested when enough questions support it,
most of its helpful answers are that predicate, few votes went against it, and the
predicate's sense does not already know it. Nothing here changes an ontology: an admin
accepts or dismisses each suggestion.

The words of a question that name the fact's subject or object are not words of a
relation ("boss" is; "Dubois" is not), nor are function words, numbers or words of
fewer than three letters.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from retrieval.domain.understanding import FUNCTION_WORDS, stem

MIN_SUPPORT = 3  # distinct questions that used the word and found the predicate helpful
MIN_SHARE = 0.6  # of the word's helpful answers, the share that were this predicate
MAX_AGAINST_SHARE = 0.34  # of the word's votes on this predicate, the share unhelpful
MIN_LETTERS = 3
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)


@dataclass(frozen=True)
class Vote:
    """One vote on a hit: its question, the hit's predicate and the names it states."""

    question: str
    predicate: str
    names: tuple[str, ...]  # the fact's subject and object, as written
    helpful: bool


@dataclass(frozen=True)
class Suggestion:
    """A word to add to a predicate's sense, with the votes behind it."""

    predicate: str
    word: str
    support: int  # distinct questions that used it and found the predicate helpful
    against: int  # distinct questions that used it and found the predicate unhelpful


def relation_words(question: str, names: Iterable[str]) -> set[str]:
    """The words of a question that may speak of a relation: casefolded, not a function
    word, not a number, at least `MIN_LETTERS` letters, and no word of the names."""
    named = {word for name in names for word in _WORD.findall(name.casefold())}
    return {
        word
        for word in _WORD.findall(question.casefold())
        if len(word) >= MIN_LETTERS and word not in FUNCTION_WORDS and word not in named
    }


def suggestions(
    votes: Iterable[Vote],
    known: Mapping[str, Iterable[str]],
    *,
    min_support: int = MIN_SUPPORT,
) -> list[Suggestion]:
    """The words to suggest, most supported first. `known` is each predicate's words
    already (its label's, its listed words', its forms'): a word met there, or through
    its stem, is not suggested again."""
    helpful: dict[tuple[str, str], set[str]] = defaultdict(set)
    unhelpful: dict[tuple[str, str], set[str]] = defaultdict(set)
    helpful_any: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for vote in votes:
        asked = " ".join(vote.question.casefold().split())
        for word in relation_words(vote.question, vote.names):
            key = (word, vote.predicate)
            if vote.helpful:
                helpful[key].add(asked)
                helpful_any[word].add((asked, vote.predicate))
            else:
                unhelpful[key].add(asked)
    stems = {
        predicate: {stem(w) for entry in words for w in _WORD.findall(entry.casefold())}
        for predicate, words in known.items()
    }
    found = []
    for (word, predicate), questions in helpful.items():
        support, against = len(questions), len(unhelpful.get((word, predicate), ()))
        share = support / max(1, len(helpful_any[word]))
        if support < min_support or share < MIN_SHARE:
            continue
        if against / (support + against) > MAX_AGAINST_SHARE:
            continue
        if stem(word) in stems.get(predicate, set()):
            continue
        found.append(Suggestion(predicate, word, support, against))
    return sorted(found, key=lambda s: (-s.support, s.against, s.predicate, s.word))
