"""What an agent may propose: one fact's bounds and checks, its text and its key (pure).

A proposal is (subject, PREDICATE, object) with the evidence that says it. Every rule
here is one the REST schema also states (patterns, lengths), so a request the schema
calls valid is accepted, and each refusal names its field with a message a model or a
person can act on.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass

from curation.domain.names import normalize_name
from curation.domain.ontology import Ontology, phrase

MAX_ENTITY_NAME = 300  # Entity.canonical_name and EntityAlias.alias hold this many characters
MAX_EVIDENCE = 4000
MAX_URL = 2000  # Episode.url

# The patterns are the schema's too, and JSON Schema validators read them in ECMA-262's
# dialect, where \s, \w and \d mean other sets than in Python: so they spell their
# classes out, and mean the same in both (checked with `fullmatch`, as `^...$` in ECMA).
#
# A name holds at least one letter or digit of a script spelt out below: a character
# `normalize_name` never trims away (a test checks every one), so the name keys an entity.
_LETTERS = (
    r"0-9A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u02af\u0386\u0388-\u03ff\u0400-\u0481"
    r"\u048a-\u052f\u0531-\u0556\u0561-\u0587\u05d0-\u05ea\u0620-\u064a\u0900-\u0dff"
    r"\u0e01-\u0e30\u1100-\u11ff\u1e00-\u1fee\u1ff0-\u1ffc\u3041-\u3096\u30a1-\u30fa"
    r"\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7a3"
)
NAME_PATTERN = rf"^[^\x00]*[{_LETTERS}][^\x00]*$"
# Whitespace in either dialect, control characters, and invisible marks: never in a URL.
_BLANKS = r"\x00-\x20\x7f-\xa0\u1680\u2000-\u200b\u2028\u2029\u202f\u205f\u3000\ufeff"
_URL_BODY = rf"https?://[^{_BLANKS}/?#]+(?:[/?#][^{_BLANKS}]*)?"
URL_PATTERN = rf"^{_URL_BODY}$"
OPTIONAL_URL_PATTERN = rf"^(?:{_URL_BODY})?$"  # the schema's: a URL, or nothing
_NAME = re.compile(NAME_PATTERN)
_URL = re.compile(URL_PATTERN)


class ProposalRefused(ValueError):
    """A proposal that cannot be recorded: a message per offending field."""

    def __init__(self, errors: Mapping[str, str]) -> None:
        self.errors = dict(errors)
        super().__init__("; ".join(f"{name}: {message}" for name, message in self.errors.items()))


@dataclass(frozen=True)
class Proposal:
    """A checked proposal: trimmed text, a predicate the workspace knows."""

    subject: str
    predicate: str
    object: str
    evidence: str
    source_url: str = ""

    @property
    def object_is_literal(self) -> bool:
        """A HAS_* predicate's object is a value ("1.4.2", "live"), not a thing (as the
        structured extractor reads fields)."""
        return self.predicate.startswith("HAS_")

    def fact_text(self, ontology: Ontology) -> str:
        return f"{self.subject} {phrase(self.predicate, ontology)} {self.object}."

    def key(self, proposer: str) -> str:
        """What makes two proposals of one proposer "the same" (names as entity matching
        compares them): the episode's external id, beside the evidence's content hash."""
        parts = (proposer, normalize_name(self.subject), self.predicate,
                 normalize_name(self.object))  # fmt: skip
        digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()
        return f"{proposer}:{digest}"


def _text_refusal(value: str) -> str:
    """Why Postgres could not store the text ("" when it can)."""
    if "\x00" in value:
        return "must not contain NUL characters"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "must be Unicode text (it holds a lone surrogate)"
    return ""


def _name_refusal(value: str) -> str:
    if not value:
        return "must not be blank"
    if len(value) > MAX_ENTITY_NAME:
        return f"must be at most {MAX_ENTITY_NAME} characters"
    if reason := _text_refusal(value):
        return reason
    if not _NAME.fullmatch(value) or not normalize_name(value):
        return "must name something: at least one letter or digit"
    if len(normalize_name(value)) > MAX_ENTITY_NAME:
        return f"must be at most {MAX_ENTITY_NAME} characters once normalised"
    return ""


def _predicate_refusal(predicate: str, ontology: Ontology) -> str:
    if ontology.get(predicate) is not None:
        return ""
    known = ", ".join(sorted(ontology.senses))
    return f"unknown predicate {predicate[:100]!r}; this workspace's predicates are: {known}"


def _evidence_refusal(evidence: str) -> str:
    if not evidence:
        return "must not be blank: quote or summarise what says the fact is true"
    if len(evidence) > MAX_EVIDENCE:
        return f"must be at most {MAX_EVIDENCE} characters"
    return _text_refusal(evidence)


def _url_refusal(url: str) -> str:
    if not url:
        return ""
    if len(url) > MAX_URL:
        return f"must be at most {MAX_URL} characters"
    if not _URL.fullmatch(url) or _text_refusal(url):
        return "must be an http:// or https:// URL (or left out)"
    return ""


def proposal_parse(
    *, subject: str, predicate: str, object: str, evidence: str, source_url: str,
    ontology: Ontology,
) -> Proposal:  # fmt: skip
    """The proposal trimmed and checked against the workspace's ontology, or
    `ProposalRefused` naming every offending field."""
    proposal = Proposal(
        subject=subject.strip(), predicate=predicate.strip(), object=object.strip(),
        evidence=evidence.strip(), source_url=source_url.strip(),
    )  # fmt: skip
    refusals = {
        "subject": _name_refusal(proposal.subject),
        "predicate": _predicate_refusal(proposal.predicate, ontology),
        "object": _name_refusal(proposal.object),
        "evidence": _evidence_refusal(proposal.evidence),
        "source_url": _url_refusal(proposal.source_url),
    }
    if errors := {name: message for name, message in refusals.items() if message}:
        raise ProposalRefused(errors)
    return proposal
