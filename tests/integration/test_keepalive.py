"""Keep-alive that drops no request: a threaded gunicorn (with the checkout's
gunicorn.conf.py) keeps an idle connection open longer than clients wait before reusing
one, so the next request on it is answered, not lost to a close racing it."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from tests.support.web import gunicorn

pytestmark = pytest.mark.django_db(transaction=True)

REQUEST = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n"


def _answer(conn: socket.socket) -> bytes:
    """One response's head and body (the body is JSON with a Content-Length)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data  # the server closed the connection
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += conn.recv(65536)
    return head


def test_a_connection_idle_past_gunicorns_old_two_seconds_still_answers(
    tmp_path: Path, app_database_url: str
) -> None:
    threaded = ("--worker-class", "gthread", "--threads", "2")
    with gunicorn(
        database_url=app_database_url, log=tmp_path / "web.log", extra_args=threaded
    ) as url:
        port = int(url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
            conn.sendall(REQUEST)
            assert _answer(conn).startswith(b"HTTP/1.1 200")
            time.sleep(4)  # idle longer than gunicorn's default keep-alive (2 s)
            conn.sendall(REQUEST)
            assert _answer(conn).startswith(b"HTTP/1.1 200")
