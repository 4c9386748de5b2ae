"""The extractor for Markdown and plain text: cue-pattern relations plus passages (pure)."""

from __future__ import annotations

from collections.abc import Sequence

from curation.domain.extraction.base import ExtractionError, unique
from curation.domain.extraction.cues import relation_claims
from curation.domain.extraction.markdown import plain_chars, plain_text
from curation.domain.extraction.segments import passage_spans
from curation.domain.records import ExtractedClaim, SourceRecord

# Bump when a change to the cue patterns, passages or Markdown handling changes what is
# extracted from text already stored: reprocessing applies it to those documents.
RULES_VERSION = 1


class RuleBasedExtractor:
    """Extractor for Markdown and plain text: cue-pattern relations and passages.

    Relations come from English cue phrases ("runs on", "is owned by"...) between names
    that are capitalised or code-like; negated statements give none. Every passage also
    becomes a STATES claim about the document, so every ingested word stays searchable.
    """

    def __init__(self, *, max_passage_chars: int = 800) -> None:
        if max_passage_chars < 1:
            raise ValueError("max_passage_chars must be at least 1")
        self.max_passage_chars = max_passage_chars

    @property
    def version(self) -> str:
        return f"rules/{RULES_VERSION}/passages-{self.max_passage_chars}"

    def extract(self, record: SourceRecord, text: str) -> Sequence[ExtractedClaim]:
        return unique(relation_claims(text)) + passage_claims(
            record, text, max_chars=self.max_passage_chars
        )


def passage_claims(record: SourceRecord, text: str, *, max_chars: int) -> list[ExtractedClaim]:
    """One STATES claim per passage: its plain text as the statement, the span its source.

    The statement is what a reader sees, without Markdown syntax (no "# " before a
    title, no bullets, no link targets); the span cites the passage exactly as written.
    A passage that is only syntax (a rule, an empty fence) states nothing.
    """
    spans = passage_spans(text, max_chars=max_chars)
    if not spans:
        return []
    document = record.title.strip() or record.external_id.strip() or record.url.strip()
    if not document:
        raise ExtractionError("the record has no title, id or url to name its passages by")
    shown = plain_chars(text)
    claims = []
    for start, end in spans:
        if statement := plain_text(shown, start, end):
            claims.append(
                ExtractedClaim(
                    subject=document,
                    subject_type="document",
                    predicate="STATES",
                    object_literal=statement,
                    fact_text=statement,
                    confidence=1.0,
                    span=(start, end),
                )
            )
    return claims
