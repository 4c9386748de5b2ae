"""A loopback HTTP server recording every request; it answers as Confluence or redirects."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Seen:
    path: str
    headers: dict[str, str]


class Recorder:
    """A loopback HTTP server recording every request; answers Confluence or redirects."""

    def __init__(self, host: str = "127.0.0.1", *, redirect_to: str = "") -> None:
        self.seen: list[Seen] = []
        self.redirect_to = redirect_to
        self._server = ThreadingHTTPServer((host, 0), _Handler)
        self._server.daemon_threads = True
        self._server.recorder = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{self._server.server_address[0]!s}:{self.port}"

    def __enter__(self) -> Recorder:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        recorder: Recorder = self.server.recorder  # type: ignore[attr-defined]
        headers = {name.lower(): value for name, value in self.headers.items()}
        recorder.seen.append(Seen(self.path.split("?")[0], headers))
        if recorder.redirect_to:
            self.send_response(302)
            self.send_header("Location", recorder.redirect_to + self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = json.dumps({"results": [], "_links": {}, "ok": True}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
