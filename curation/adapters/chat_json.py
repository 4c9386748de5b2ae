"""What the adapters that ask an OpenAI-compatible chat model for JSON share.

The judges, the LLM extractor and the LLM reranker all send one system prompt and one
user message at temperature 0 in JSON mode, and read one JSON object back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import openai
from openai.types.chat import ChatCompletion

# Some models wrap JSON mode answers in a Markdown fence anyway.
CODE_FENCE = re.compile(r"\A```(?:json)?\s*|\s*```\Z")


# Errors that say "try again later" rather than "this request is wrong"; timeouts are
# APIConnectionError subclasses. 4xx other than 429 is never retried. Every adapter on an
# OpenAI(-compatible) API declares these as its `transient_errors` for the guarded wrapper.
OPENAI_TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    openai.APIConnectionError,
    openai.RateLimitError,
    openai.InternalServerError,
)


class UnreadableAnswer(ValueError):
    """The model's answer holds no readable JSON object (or not the fields asked for)."""


def quoted(text: str) -> str:
    """The text as a JSON string: quoted and escaped, accents and scripts kept."""
    return json.dumps(text, ensure_ascii=False)


def complete_json(client: openai.OpenAI, *, model: str, system: str, user: str) -> ChatCompletion:
    """One chat completion in JSON mode at temperature 0; openai errors propagate."""
    return client.chat.completions.create(
        model=model,
        messages=[
            {"role": "system", "content": system},
            {"role": "user", "content": user},
        ],
        temperature=0,
        response_format={"type": "json_object"},
    )


def json_answer(response: Any) -> Mapping[str, Any]:
    """The JSON object the model answered; UnreadableAnswer when there is none."""
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list) or not choices:
        raise UnreadableAnswer("the response has no choices")
    message = getattr(choices[0], "message", None)
    if getattr(message, "refusal", None):
        raise UnreadableAnswer("the model refused")
    content = getattr(message, "content", None)
    if not isinstance(content, str) or not content.strip():
        reason = getattr(choices[0], "finish_reason", None)
        raise UnreadableAnswer(f"the answer is empty ({reason})")
    try:
        data = json.loads(CODE_FENCE.sub("", content.strip()))
    except json.JSONDecodeError as error:
        raise UnreadableAnswer(f"the answer is not JSON ({error.msg}, char {error.pos})") from None
    if not isinstance(data, Mapping):
        raise UnreadableAnswer(f"the answer is a JSON {type(data).__name__}, not an object")
    return data
