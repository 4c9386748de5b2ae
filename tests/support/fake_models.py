"""A fake OpenAI-compatible Chat Completions and Voyage rerank API on 127.0.0.1 (plain module).

The real `openai` and `voyageai` clients are pointed at it (`base_url`). It answers
`POST /v1/chat/completions` and `POST /v1/rerank` with the answers a test scripts, in
order whatever the endpoint, and records each request's path, JSON body and
Authorization header. With nothing scripted it answers 500; an unknown path gets 404.
Subclass `StubModelAPI` to add the builders a test module needs, then serve it with
`serving()`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import openai

CHAT_COMPLETIONS = "/v1/chat/completions"
RERANK = "/v1/rerank"
ROUTES = frozenset({CHAT_COMPLETIONS, RERANK})


# What a chat completion bills unless a test says otherwise: (prompt, completion) tokens.
TOKENS = (412, 24)


def completion(
    content: str | None,
    *,
    refusal: str | None = None,
    finish_reason: str = "stop",
    model: str = "gpt-4o-2024-08-06",
    tokens: tuple[int, int] | None = TOKENS,
) -> dict[str, Any]:
    """A chat.completion object as the API returns it; `tokens=None` leaves out `usage`,
    as some OpenAI-compatible servers do."""
    answer = {
        "id": "chatcmpl-BAx3kQeW9nV0aJ2rT7yLm5sPdFh1c",
        "object": "chat.completion",
        "created": 1_741_570_283,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": content,
                    "refusal": refusal,
                    "annotations": [],
                },
                "logprobs": None,
                "finish_reason": finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": tokens[0] if tokens else 0,
            "completion_tokens": tokens[1] if tokens else 0,
            "total_tokens": sum(tokens or ()),
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        },
        "service_tier": "default",
        "system_fingerprint": "fp_a7d06e42a7",
    }
    if tokens is None:
        del answer["usage"]
    return answer


def rerank_answer(
    scores: dict[int, float], *, model: str = "rerank-2.5", tokens: int = 120
) -> dict[str, Any]:
    """A Voyage rerank answer: results by descending relevance, as the API sends them."""
    ranked = sorted(scores.items(), key=lambda item: item[1], reverse=True)
    return {
        "object": "list",
        "data": [{"index": index, "relevance_score": score} for index, score in ranked],
        "model": model,
        "usage": {"total_tokens": tokens},
    }


@dataclass
class StubModelAPI:
    """A scripted model API: answers in order, records each request."""

    port: int = 0
    answers: list[tuple[int, str, bytes]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def answer(self, status: int, body: Any, *, content_type: str = "application/json") -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.answers.append((status, content_type, data))

    def reply(
        self,
        content: str | None,
        *,
        refusal: str | None = None,
        finish_reason: str = "stop",
        tokens: tuple[int, int] | None = TOKENS,
    ) -> None:
        self.answer(
            200,
            completion(content, refusal=refusal, finish_reason=finish_reason, tokens=tokens),
        )

    def reply_json(self, verdict: Any) -> None:
        self.reply(json.dumps(verdict))

    def fail(self, status: int, message: str, *, kind: str = "server_error") -> None:
        # OpenAI reads `error.message`, Voyage reads `detail`.
        error = {"message": message, "type": kind, "param": None, "code": None}
        self.answer(status, {"error": error, "detail": message})

    def client(self, *, api_key: str = "test") -> openai.OpenAI:
        return openai.OpenAI(base_url=self.base_url, api_key=api_key, max_retries=0, timeout=5)

    def body(self) -> dict[str, Any]:
        (request,) = self.requests
        return dict(request["body"])

    def user_message(self) -> str:
        return str(self.body()["messages"][-1]["content"])

    def next_answer(self, path: str) -> tuple[int, str, bytes]:
        if path not in ROUTES:
            return 404, "application/json", json.dumps({"error": {"message": path}}).encode()
        if not self.answers:
            return 500, "application/json", b'{"error": {"message": "none"}, "detail": "none"}'
        return self.answers.pop(0)


def _handler(stub: StubModelAPI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            authorization = self.headers.get("Authorization", "")
            stub.requests.append({"path": self.path, "body": body, "authorization": authorization})
            status, kind, data = stub.next_answer(self.path)
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def serving[S: StubModelAPI](stub: S) -> Iterator[S]:
    """Serve the stub on a free port of 127.0.0.1 until the block ends."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(stub))
    stub.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield stub
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
