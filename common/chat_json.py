"""What the adapters that ask an OpenAI-compatible chat model for JSON share.

The judges, the LLM extractor and the LLM reranker all send one system prompt and one
user message at temperature 0 in JSON mode, and read one JSON object back; each answered
request's tokens go to the usage meter (tokens and cost per workspace and model). It is on
the floor because curation's adapters and retrieval's reranker both use it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, Protocol

import openai
from openai.types.chat import ChatCompletion

# Some models wrap JSON mode answers in a Markdown fence anyway.
CODE_FENCE = re.compile(r"\A```(?:json)?\s*|\s*```\Z")
# For a server that answers without `usage` (some OpenAI-compatible ones): the usual
# rule of thumb for English with BPE tokenizers, as the embedding meter estimates.
CHARS_PER_TOKEN = 4


# Errors that say "try again later" rather than "this request is wrong"; timeouts are
# APIConnectionError subclasses. 4xx other than 429 is never retried. Every adapter on an
# OpenAI(-compatible) API declares these as its `transient_errors` for the guarded wrapper.
OPENAI_TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    openai.APIConnectionError,
    openai.RateLimitError,
    openai.InternalServerError,
)


class UsageMeter(Protocol):
    """Counts the tokens each chat model request used and what they cost, charged to the
    group the work is for (retrieval's meter, joined in the composition root)."""

    def record_chat(
        self, *, provider: str, model: str, input_tokens: int, output_tokens: int
    ) -> None:
        """One request's prompt (input) and answer (output) tokens, as the provider counted
        them; never raises (metering must not fail the work it counts)."""
        ...


class UnreadableAnswer(ValueError):
    """The model's answer holds no readable JSON object (or not the fields asked for)."""


def quoted(text: str) -> str:
    """The text as a JSON string: quoted and escaped, accents and scripts kept."""
    return json.dumps(text, ensure_ascii=False)


def complete_json(
    client: openai.OpenAI,
    *,
    model: str,
    system: str,
    user: str,
    meter: UsageMeter | None = None,
    provider: str = "chat",
) -> ChatCompletion:
    """One chat completion in JSON mode at temperature 0; openai errors propagate.

    An answer, readable or not, was billed: its tokens go to `meter` under `provider`
    (the adapter's class, as its calls are counted) and the configured model.
    """
    response = client.chat.completions.create(
        model=model,
        messages=[
            {"role": "system", "content": system},
            {"role": "user", "content": user},
        ],
        temperature=0,
        response_format={"type": "json_object"},
    )
    if meter is not None:
        input_tokens, output_tokens = _tokens(response, prompt=system + user)
        meter.record_chat(
            provider=provider,
            model=model,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
        )
    return response


def _tokens(response: ChatCompletion, *, prompt: str) -> tuple[int, int]:
    """(prompt, completion) tokens as the API counted them; estimated from characters
    when it counted none. The answer is read as leniently as `json_answer` reads it."""
    usage = getattr(response, "usage", None)
    prompt_tokens = getattr(usage, "prompt_tokens", None)
    completion_tokens = getattr(usage, "completion_tokens", None)
    if isinstance(prompt_tokens, int) and isinstance(completion_tokens, int):
        return prompt_tokens, completion_tokens
    choices = getattr(response, "choices", None)
    first = choices[0] if isinstance(choices, list) and choices else None
    answer = getattr(getattr(first, "message", None), "content", None)
    return _estimated(prompt), _estimated(answer if isinstance(answer, str) else "")


def _estimated(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


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
