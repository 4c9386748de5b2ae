"""Deterministic extraction without a model (pure, standard library only).

- `base`: the error, the batch and predicate names every extractor shares;
- `segments`: sentences and passages as spans of the text;
- `markdown`: Markdown read as plain text, keeping offsets;
- `cues`: English cue-pattern relations ("X runs on Y");
- `rules`: `RuleBasedExtractor`, free text: relations plus one claim per passage;
- `structured`: `StructuredExtractor`, CMDB configuration items and Jira issues.

Offsets (`span`) are Python string indices (code points) into the text the extractor
was given, so `text[start:end]` is the cited evidence in any language.
"""

from curation.domain.extraction.base import ClaimBatch, ExtractionError, Span, to_predicate
from curation.domain.extraction.rules import RuleBasedExtractor
from curation.domain.extraction.segments import passage_spans, sentence_spans
from curation.domain.extraction.structured import (
    DEFAULT_CMDB_MAPPING,
    LITERAL_FIELDS,
    StructuredExtractor,
)

__all__ = [
    "DEFAULT_CMDB_MAPPING",
    "LITERAL_FIELDS",
    "ClaimBatch",
    "ExtractionError",
    "RuleBasedExtractor",
    "Span",
    "StructuredExtractor",
    "passage_spans",
    "sentence_spans",
    "to_predicate",
]
