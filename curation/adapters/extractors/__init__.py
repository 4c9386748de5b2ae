"""Claim extractors: the deterministic ones live in the domain; model-backed ones here."""

from curation.adapters.extractors.llm import LLMExtractor
from curation.domain.extraction import ExtractionError, RuleBasedExtractor, StructuredExtractor

__all__ = ["ExtractionError", "LLMExtractor", "RuleBasedExtractor", "StructuredExtractor"]
