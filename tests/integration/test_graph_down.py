"""A graph outage stops only the graph consumer: search indexing goes on, the graph catches up."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from django.test import Client, override_settings

from curation import bootstrap
from curation.domain.outbox import Consumer
from curation.domain.tiers import ClaimStatus
from curation.models import Claim, OutboxJob
from curation.tasks import ingest_now, process_outbox
from devtools.redis_falkordb import falkordb_binaries
from tenants import rls
from tests.support.tenancy import Tenant, markdown_source

pytestmark = pytest.mark.django_db


class GraphServer:
    """A FalkorDB server of its own (not the broker's), so it can be stopped mid-test."""

    def __init__(self, home: Path) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.home = home
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        server, module = falkordb_binaries()
        self.process = subprocess.Popen(
            [server, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.home), "--loadmodule", module],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        client = redis.Redis(port=self.port, socket_connect_timeout=0.2)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if client.ping():
                    return
            except redis.ConnectionError:
                time.sleep(0.05)
        pytest.fail("the graph server did not start")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None


@pytest.fixture
def graph_server(tmp_path: Path) -> Iterator[GraphServer]:
    server = GraphServer(tmp_path)
    server.start()
    with override_settings(VERA_MEMORY__FALKORDB_URL=server.url):
        yield server
    server.stop()


def _jobs(tenant: Tenant, consumer: Consumer) -> dict[str, int]:
    with rls.tenant_context(tenant.principal(tenant.admin)):
        rows = OutboxJob.objects.filter(consumer=consumer).values_list("status", "attempts")
        return {
            "pending": sum(1 for status, _ in rows if status == "pending"),
            "done": sum(1 for status, _ in rows if status == "done"),
            "attempts": sum(attempts for _, attempts in rows),
        }


def test_search_indexing_goes_on_while_the_graph_is_down_and_the_graph_catches_up(
    tenant_a: Tenant, tmp_path: Path, graph_server: GraphServer, client: Client
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "pay.md").write_text("# Payments\n\nThe payments-api runs on k8s-prod-7.\n")
    source_id = markdown_source(tenant_a, docs, tier=1)
    principal = tenant_a.principal(tenant_a.admin)
    graph_server.stop()
    ingest_now(source_id=source_id, group_id=tenant_a.workspace.group_id)
    with rls.tenant_context(principal):
        published = Claim.objects.filter(status=ClaimStatus.PUBLISHED).count()

    assert process_outbox(consumer="index") == {"done": published}
    assert process_outbox(consumer="graph") == {"waiting": 1}
    # The graph's jobs wait untouched: no attempt is spent while its server is down.
    assert _jobs(tenant_a, Consumer.GRAPH) == {"pending": published, "done": 0, "attempts": 0}
    client.force_login(tenant_a.admin)
    hits = client.get("/api/v1/search", {"q": "payments-api runs on"}).json()["hits"]
    assert any("k8s-prod-7" in hit["fact"] for hit in hits)

    graph_server.start()
    assert process_outbox(consumer="graph") == {"done": published}
    assert bootstrap.providers().graph().count_claims() == published
    assert _jobs(tenant_a, Consumer.GRAPH)["pending"] == 0
