"""Free-text extraction by an OpenAI-compatible chat model (Chat Completions, JSON mode)."""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
from collections.abc import Mapping
from typing import Any

import openai

from common.chat_json import CODE_FENCE, UsageMeter, complete_json
from curation.domain.extraction import ClaimBatch, ExtractionError, to_predicate
from curation.domain.records import PREDICATE_PATTERN, ExtractedClaim, SourceRecord

logger = logging.getLogger(__name__)

SYSTEM_PROMPT = """\
You extract facts from one document into an organisational knowledge graph.
Answer with a single JSON object and nothing else:
{"claims": [{"subject": str, "subject_type": str, "predicate": str, "object": str,
  "object_is_entity": bool, "object_type": str, "fact": str, "confidence": number,
  "quote": str}]}

Fields:
- subject: the canonical name of the entity the fact is about.
- subject_type, object_type: a lower-case type such as service, team, person, database,
  host, environment, location, language, project, component, document, thing.
- predicate: the relation in UPPER_SNAKE_CASE, preferring RUNS_ON, DEPENDS_ON, OWNED_BY,
  USES, IMPLEMENTS, HOSTED_IN, DEPLOYED_TO, MAINTAINED_BY, WRITTEN_IN, PART_OF, CALLS,
  STORES_IN, HAS_STATUS, HAS_VERSION.
- object: the canonical name of the other entity, or the value (a status, a version,
  a date, a number).
- object_is_entity: true when object names a thing, false when it is a value.
- fact: one self-contained sentence stating the fact, in the document's language.
- confidence: from 0 to 1, how sure the document makes you of the fact.
- quote: the shortest passage of the document that states the fact, copied exactly.

Rules:
- Canonical names are the entity's own proper name as the document spells it, without
  articles, Markdown, quotes or possessives ("the `billing-api` service" -> "billing-api",
  "the Payments team" -> "Payments team"). Keep accents and the original script.
- Only facts the document states as currently true: skip negated, past, planned and
  hypothetical statements. Resolve pronouns to the entity they refer to.
- Nothing from outside the document. With no facts, answer {"claims": []}.
"""

# Statuses worth retrying later: the openai error is re-raised so the ingest run stops
# before its cursor moves past the record.
_TRANSIENT_STATUS = frozenset({408, 409, 429})
_WORD_SLACK = 0.1  # a truncation may back up this share of max_chars to end between words


class LLMExtractor:
    """Extractor that asks a chat model for claims (JSON mode, temperature 0).

    Each claim needs subject, predicate, object, object_is_entity and confidence; fact,
    quote and the types are optional (a sentence is built from the triple, the span is
    None, the types are "thing", or "value" for a literal). A claim that lacks a required
    field, has a field of the wrong type or a predicate that cannot be made UPPER_SNAKE is
    dropped, logged and counted in the returned ClaimBatch; a confidence outside [0, 1]
    is clamped. An answer with no readable claims list raises ExtractionError, as does a
    request the API refuses (a 4xx). Timeouts, connection errors, 408/409/429 and 5xx
    answers propagate as the openai exception: retrying later can succeed. Each answer's
    tokens go to `meter`.
    """

    def __init__(
        self,
        *,
        client: openai.OpenAI,
        model: str,
        max_chars: int = 12000,
        meter: UsageMeter | None = None,
    ) -> None:
        if max_chars < 1:
            raise ValueError("max_chars must be at least 1")
        self.client = client
        self.model = model
        self.max_chars = max_chars
        self.meter = meter

    @property
    def version(self) -> str:
        """The model and the prompt it is given (a digest: a changed prompt shows)."""
        prompt = hashlib.sha256(SYSTEM_PROMPT.encode()).hexdigest()[:12]
        return f"llm/{self.model}/prompt-{prompt}/chars-{self.max_chars}"

    def extract(self, record: SourceRecord, text: str) -> ClaimBatch:
        if not text.strip():
            return ClaimBatch()
        body = _truncated(text, self.max_chars)
        notes: list[str] = []
        if len(body) < len(text):
            notes.append(f"the document was cut to its first {len(body)} of {len(text)} characters")
        items = _claim_items(self._ask(record, body, notes))
        claims: list[ExtractedClaim] = []
        for index, item in enumerate(items):
            try:
                claims.append(_claim(item, body))
            except ValueError as error:
                notes.append(f"claim {index} dropped: {error}")
        dropped = len(items) - len(claims)
        if dropped:
            logger.warning(
                "LLM extraction of %s dropped %d of %d claims: %s",
                record.external_id,
                dropped,
                len(items),
                "; ".join(notes),
            )
        return ClaimBatch(claims, dropped=dropped, notes=notes)

    def _ask(self, record: SourceRecord, body: str, notes: list[str]) -> str:
        note = "".join(f"Note: {note}.\n" for note in notes)
        document = (
            f"Title: {record.title or '(none)'}\nId: {record.external_id}\n{note}\n"
            f"<document>\n{body}\n</document>"
        )
        try:
            response = complete_json(
                self.client, model=self.model, system=SYSTEM_PROMPT, user=document,
                meter=self.meter, provider=type(self).__name__,
            )  # fmt: skip
        except openai.APIStatusError as error:
            if error.status_code in _TRANSIENT_STATUS or error.status_code >= 500:
                raise
            raise ExtractionError(
                f"the extraction model refused the request (HTTP {error.status_code}): {error}"
            ) from error
        if not response.choices:
            raise ExtractionError("the extraction model returned no answer")
        choice = response.choices[0]
        if getattr(choice.message, "refusal", None):
            raise ExtractionError(f"the extraction model refused: {choice.message.refusal}")
        if not choice.message.content:
            reason = choice.finish_reason
            raise ExtractionError(f"the extraction model's answer is empty ({reason})")
        if choice.finish_reason == "length":
            notes.append("the answer was cut off at the model's token limit")
        return choice.message.content


def _truncated(text: str, limit: int) -> str:
    """The first `limit` characters, ending between words when one ends close enough."""
    if len(text) <= limit:
        return text
    cut = limit
    floor = limit - int(limit * _WORD_SLACK)
    while cut > floor and not text[cut].isspace():
        cut -= 1
    return text[: cut if cut > floor else limit].rstrip()


def _claim_items(content: str) -> list[Any]:
    """The claims list of an answer; ExtractionError when there is none to read."""
    try:
        data = json.loads(CODE_FENCE.sub("", content.strip()))
    except json.JSONDecodeError as error:
        raise ExtractionError(
            f"the extraction model's answer is not JSON ({error.msg} at {error.pos}): "
            f"{content[:200]!r}"
        ) from None
    if isinstance(data, Mapping):
        data = data.get("claims")
    if not isinstance(data, list):
        raise ExtractionError(
            f'the extraction model\'s answer has no "claims" list: {content[:200]!r}'
        )
    return data


def _string(item: Mapping[str, Any], key: str) -> str | None:
    """The field as a whitespace-collapsed string; None when absent, ValueError if not text."""
    value = item.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{key} is a {type(value).__name__}, not a string")
    return " ".join(value.split())


def _required(item: Mapping[str, Any], key: str) -> str:
    value = _string(item, key)
    if not value:
        raise ValueError(f"{key} is missing or empty")
    return value


def _object(item: Mapping[str, Any]) -> str:
    value = item.get("object")
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return str(value)  # a version or a count given as a JSON number
    return _required(item, "object")


def _predicate(item: Mapping[str, Any]) -> str:
    raw = _required(item, "predicate")
    predicate = raw if PREDICATE_PATTERN.match(raw) else to_predicate(raw)
    if predicate is None:
        raise ValueError(f"predicate {raw!r} cannot be written in UPPER_SNAKE")
    return predicate


def _confidence(item: Mapping[str, Any]) -> float:
    value = item.get("confidence")
    if value is None:
        raise ValueError("confidence is missing")
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise ValueError(f"confidence {value!r} is not a number")
    return min(1.0, max(0.0, float(value)))


def _span(text: str, quote: str | None) -> tuple[int, int] | None:
    """Where the quote is in the text: exactly, else ignoring case and spacing."""
    if not quote:
        return None
    start = text.find(quote)
    if start >= 0:
        return (start, start + len(quote))
    loose = re.compile(r"\s+".join(map(re.escape, quote.split())), re.IGNORECASE)
    match = loose.search(text)
    return match.span() if match else None


def _claim(item: Any, text: str) -> ExtractedClaim:
    """One model claim as an ExtractedClaim; ValueError says why it cannot be one."""
    if not isinstance(item, Mapping):
        raise ValueError(f"a claim is a {type(item).__name__}, not an object")
    subject, predicate, obj = _required(item, "subject"), _predicate(item), _object(item)
    is_entity = item.get("object_is_entity")
    if not isinstance(is_entity, bool):
        raise ValueError(f"object_is_entity {is_entity!r} is not true or false")
    fact = _string(item, "fact")
    return ExtractedClaim(
        subject=subject,
        predicate=predicate,
        object_name=obj if is_entity else None,
        object_literal=None if is_entity else obj,
        fact_text=fact or f"{subject} {predicate.lower().replace('_', ' ')} {obj}.",
        confidence=_confidence(item),
        subject_type=(_string(item, "subject_type") or "thing").lower(),
        object_type=(_string(item, "object_type") or ("thing" if is_entity else "value")).lower(),
        span=_span(text, _string(item, "quote")),
    )
