"""/healthz: Postgres, Redis, the graph and the object store, with latency; 503 only when
Postgres is down (the node cannot work), "degraded" (200, named) when another one is."""

from __future__ import annotations

import secrets
import shutil
import socket
from pathlib import Path

import httpx
import pytest
from django.test import Client

from devtools.common import ROOT, Profile
from devtools.graph_server import GraphServer
from devtools.postgres import Postgres
from tests.support.s3_server import S3Server
from tests.support.web import free_port, gunicorn
from vera import health

pytestmark = pytest.mark.django_db


def _closed_port() -> int:
    # Bind then release: nothing listens there for the duration of the test.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_healthz_is_green_without_authentication(client: Client) -> None:
    response = client.get("/healthz")
    body = response.json()
    assert response.status_code == 200
    assert body["status"] == "ok"
    assert body["failing"] == []
    assert set(body["checks"]) == {"postgres", "redis", "graph", "object_store"}
    for check in body["checks"].values():
        assert check["ok"] is True
        assert check["latency_ms"] >= 0
    assert body["checks"]["graph"]["backend"] == "falkordb"
    assert body["checks"]["object_store"]["backend"] == "local"


def test_healthz_is_degraded_naming_redis_when_redis_is_down(client: Client, settings) -> None:
    settings.REDIS_URL = f"redis://127.0.0.1:{_closed_port()}/0"
    response = client.get("/healthz")
    body = response.json()
    assert response.status_code == 200
    assert (body["status"], body["failing"]) == ("degraded", [])
    assert body["degraded"][0].startswith("redis unavailable (ConnectionError): tasks cannot")
    assert body["checks"]["redis"] == {
        "ok": False,
        "latency_ms": body["checks"]["redis"]["latency_ms"],
        "error": "ConnectionError",
    }


def test_healthz_is_degraded_naming_the_graph_when_falkordb_is_down(
    client: Client, settings
) -> None:
    # The graph is a projection: a load balancer must not take the node out for it.
    settings.VERA_MEMORY__FALKORDB_URL = f"redis://127.0.0.1:{_closed_port()}/0"
    response = client.get("/healthz")
    body = response.json()
    assert response.status_code == 200
    assert (body["status"], body["failing"]) == ("degraded", [])
    assert body["degraded"][0].startswith("graph unavailable (")
    assert body["checks"]["graph"]["ok"] is False


def test_healthz_goes_degraded_when_the_graph_server_stops_and_ok_when_it_is_back(
    client: Client, graph_server: GraphServer
) -> None:
    # A real FalkorDB server, stopped as an outage would: the node stays in rotation.
    assert client.get("/healthz").json()["checks"]["graph"]["ok"] is True
    graph_server.stop()
    response = client.get("/healthz")
    body = response.json()
    assert response.status_code == 200
    assert (body["status"], body["failing"]) == ("degraded", [])
    assert [line.split(" ")[0] for line in body["degraded"]] == ["graph"]
    assert body["checks"]["graph"]["ok"] is False
    graph_server.start()
    body = client.get("/healthz").json()
    assert (body["status"], body["checks"]["graph"]["ok"]) == ("ok", True)


def test_healthz_is_green_with_the_s3_object_store_when_its_bucket_answers(
    client: Client, s3_bucket: str
) -> None:
    body = client.get("/healthz").json()
    assert body["status"] == "ok"
    assert body["checks"]["object_store"]["ok"] is True
    assert body["checks"]["object_store"]["backend"] == "s3"


def test_healthz_goes_degraded_naming_the_object_store_when_s3_stops_and_ok_when_it_is_back(
    client: Client, s3_outage: S3Server, settings
) -> None:
    # A real S3 API server stopped as an outage would: ingest waits, the node serves on.
    assert client.get("/healthz").json()["checks"]["object_store"]["ok"] is True
    s3_outage.stop()
    response = client.get("/healthz")
    body = response.json()
    assert response.status_code == 200
    assert (body["status"], body["failing"]) == ("degraded", [])
    assert body["degraded"] == [
        f"object_store unavailable (EndpointConnectionError): {health.COST['object_store']}"
    ]
    assert body["checks"]["object_store"]["ok"] is False
    s3_outage.start()  # moto keeps nothing across a restart: the bucket is made again
    s3_outage.client().create_bucket(Bucket=settings.VERA_OBJECT_STORE__BUCKET)
    body = client.get("/healthz").json()
    assert (body["status"], body["checks"]["object_store"]["ok"]) == ("ok", True)


def test_healthz_is_degraded_naming_no_such_bucket_when_the_bucket_was_never_made(
    client: Client, s3_bucket: str, s3_server: S3Server
) -> None:
    s3_server.client().delete_bucket(Bucket=s3_bucket)
    response = client.get("/healthz")
    body = response.json()
    assert (response.status_code, body["status"], body["failing"]) == (200, "degraded", [])
    assert body["degraded"][0].startswith("object_store unavailable (NoSuchBucket): ingest")
    assert body["checks"]["object_store"]["error"] == "NoSuchBucket"


def test_a_search_still_answers_when_the_graph_and_redis_are_down(
    client: Client, settings, django_user_model
) -> None:
    settings.VERA_MEMORY__FALKORDB_URL = f"redis://127.0.0.1:{_closed_port()}/0"
    settings.REDIS_URL = f"redis://127.0.0.1:{_closed_port()}/0"
    client.force_login(django_user_model.objects.create_user("probe"))
    assert client.get("/healthz").status_code == 200
    assert client.get("/api/v1/search", {"q": "billing-api"}).status_code == 200


def test_healthz_names_a_misconfigured_graph_backend_when_degraded(
    client: Client, settings
) -> None:
    settings.VERA_MEMORY__GRAPH_BACKEND = "neo4j"
    settings.VERA_NEO4J__URI = ""
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json()["checks"]["graph"]["error"] == "ImproperlyConfigured"


def test_healthz_is_503_naming_postgres_when_the_database_is_unreachable(
    client: Client, settings
) -> None:
    from django.db import connections

    connection = connections["default"]
    saved = connection.settings_dict["PORT"]
    connection.close()
    connection.settings_dict["PORT"] = _closed_port()
    try:
        response = client.get("/healthz")
    finally:
        connection.close()
        connection.settings_dict["PORT"] = saved
    assert response.status_code == 503
    assert response.json()["failing"] == ["postgres"]


def test_healthz_refuses_writes(client: Client) -> None:
    assert client.post("/healthz").status_code == 405


def test_healthz_errors_do_not_leak_connection_details(client: Client, settings) -> None:
    settings.REDIS_URL = f"redis://:hunter2@127.0.0.1:{_closed_port()}/0"
    body = client.get("/healthz").content.decode()
    assert "hunter2" not in body
    assert "127.0.0.1" not in body


def test_a_web_node_answers_503_naming_postgres_while_its_postgres_is_stopped(
    tmp_path: Path,
) -> None:
    """A PostgreSQL server of its own, really stopped and started again under a running
    gunicorn: the node is taken out (503) while it is down and back in when it is up."""
    # Under the checkout's state folder (the postgres user reaches it), and short: a
    # Unix socket's path has a 107-byte limit that pytest's temporary folders pass.
    root = ROOT / ".devservices" / f"h{secrets.token_hex(3)}"
    profile = Profile(name="pg", pg_port=free_port(), redis_port=0, root=root)
    postgres = Postgres(profile)
    passwords = profile.secrets()
    try:
        postgres.start(passwords)
        url = postgres.env(passwords)["DATABASE_URL"]
        with gunicorn(database_url=url, log=tmp_path / "gunicorn.log") as web:
            assert _health(web)[0] == 200
            postgres.stop()
            status, body = _health(web)
            assert status == 503
            assert (body["status"], body["failing"]) == ("fail", ["postgres"])
            assert body["checks"]["postgres"]["ok"] is False
            postgres.start(passwords)
            status, body = _health(web)
            assert (status, body["checks"]["postgres"]["ok"]) == (200, True)
    finally:
        postgres.stop()
        shutil.rmtree(root, ignore_errors=True)


def _health(base: str) -> tuple[int, dict[str, object]]:
    response = httpx.get(f"{base}/healthz", timeout=30)
    return response.status_code, response.json()
