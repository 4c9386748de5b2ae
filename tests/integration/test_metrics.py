"""/metrics: the samples of every gunicorn worker, merged; labels bounded, never a tenant.

The gunicorn test runs two sync workers over a PROMETHEUS_MULTIPROC_DIR of its own and
sends its searches from several threads at once, so both workers serve some (only
searches are counted exactly: a /healthz probe of the start-up wait that timed out may
still be answered later). Each
worker's samples are in its own file; the scrape must add them up. The in-process tests
read this process's default registry (no multiprocess directory in the test run).
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from celery.signals import task_postrun
from django.test import Client
from prometheus_client import REGISTRY
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from curation.domain.outbox import PROJECT_CLAIM, Consumer
from curation.models import OutboxJob
from curation.services.outbox import outbox_enqueue_many
from curation.tasks import ingest_source
from tenants import rls
from tenants.domain.scopes import Role
from tests.support.tenancy import Tenant
from tests.support.web import gunicorn

TOKEN = "scrape-me"
REQUESTS = "vera_http_request_duration_seconds_count"
SEARCH_ROUTE = "api/v1/search"
SEARCHES = 40


def _get(url: str, *, token: str | None = None) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(url, headers=headers)  # noqa: S310 - loopback
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - loopback
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def _samples(text: str) -> Iterator[Sample]:
    for family in text_string_to_metric_families(text):
        yield from family.samples


def _value(text: str, name: str, **labels: str) -> float:
    """The sample `name` with (at least) these labels; 0 when there is none yet."""
    return sum(
        s.value for s in _samples(text) if s.name == name and labels.items() <= s.labels.items()
    )


def _scrape(url: str) -> str:
    status, text = _get(f"{url}/metrics", token=TOKEN)
    assert status == 200, text
    return text


def _requests_per_worker(directory: Path, route: str) -> Counter[str]:
    """Each worker's own count of requests to `route`, read from its histogram file (named
    by host and pid: `vera.metrics.process_identifier`)."""
    counts: Counter[str] = Counter()
    for file in directory.glob("histogram_*.db"):
        pid = file.stem.removeprefix("histogram_")
        for metric in MultiProcessCollector.merge([str(file)]):
            for s in metric.samples:
                if s.name == REQUESTS and s.labels["route"] == route:
                    counts[pid] += int(s.value)
    return counts


@pytest.mark.django_db(transaction=True)
def test_counts_add_up_over_two_gunicorn_workers_and_name_no_tenant(
    tenant_a: Tenant, tmp_path: Path, app_database_url: str
) -> None:
    issued = tenant_a.issue_key(owner=tenant_a.viewer, role=Role.VIEWER)
    group_id = tenant_a.workspace.group_id
    directory = tmp_path / "metrics"
    directory.mkdir()
    env = {"PROMETHEUS_MULTIPROC_DIR": str(directory), "VERA_METRICS__TOKEN": TOKEN}
    with gunicorn(database_url=app_database_url, log=tmp_path / "web.log", workers=2,
                  extra_env=env) as url:  # fmt: skip
        before = _scrape(url)

        # Four at a time, each on a new connection: both sync workers must take some.
        with ThreadPoolExecutor(max_workers=4) as pool:
            statuses = [status for status, _ in pool.map(
                lambda _: _get(f"{url}/api/v1/search?q=billing-api", token=issued.plaintext),
                range(SEARCHES),
            )]  # fmt: skip
        # A raw path that names the tenant: the label is "unmatched", not the path.
        lost, _ = _get(f"{url}/no-such-page/{group_id}")
        after = _scrape(url)
        refused, _ = _get(f"{url}/metrics", token="wrong")

    assert statuses == [200] * SEARCHES
    assert (lost, refused) == (404, 401)
    searched = {"route": SEARCH_ROUTE, "method": "GET", "status": "200"}
    assert _value(after, REQUESTS, **searched) - _value(before, REQUESTS, **searched) == SEARCHES
    assert _value(after, REQUESTS, route="unmatched", status="404") == 1
    stage = "vera_search_stage_seconds_count"
    assert _value(after, stage, stage="blend") - _value(before, stage, stage="blend") == SEARCHES

    per_worker = _requests_per_worker(directory, SEARCH_ROUTE)
    assert len(per_worker) == 2, f"one worker served every search: {per_worker}"
    assert all(per_worker.values())
    assert sum(per_worker.values()) == _value(after, REQUESTS, route=SEARCH_ROUTE)

    secrets = (group_id, tenant_a.org.group_id, issued.key.prefix)
    labels = {value for s in _samples(after) for value in s.labels.values()}
    assert not [value for value in labels for secret in secrets if secret in value]
    assert group_id not in after


def _count(route: str, method: str, status: str) -> float:
    labels = {"route": route, "method": method, "status": status}
    return REGISTRY.get_sample_value(REQUESTS, labels) or 0.0


@pytest.mark.django_db
def test_a_request_is_counted_under_its_url_pattern_when_its_path_holds_an_id(
    client: Client,
) -> None:
    route = "api/v1/claims/<int:pk>/retract"
    before = _count(route, "POST", "401")

    response = client.post("/api/v1/claims/48151623/retract")

    assert response.status_code == 401
    assert _count(route, "POST", "401") == before + 1


@pytest.mark.django_db
def test_a_request_is_counted_as_unmatched_when_no_pattern_resolves_it(client: Client) -> None:
    before = _count("unmatched", "GET", "404")

    client.get("/no-such-page/w:abcdef")

    assert _count("unmatched", "GET", "404") == before + 1


@pytest.mark.django_db
def test_a_request_is_counted_as_other_when_its_method_is_not_http(client: Client) -> None:
    before = _count("healthz", "other", "405")

    response = client.generic("BREW", "/healthz")

    assert response.status_code == 405
    assert _count("healthz", "other", "405") == before + 1


@pytest.mark.django_db
def test_dead_letters_are_counted_per_consumer_over_every_tenant(
    client: Client, tenant_a: Tenant, tenant_b: Tenant, settings
) -> None:
    settings.VERA_METRICS__TOKEN = TOKEN
    for tenant in (tenant_a, tenant_b):
        with rls.tenant_context(tenant.principal(tenant.admin)):
            outbox_enqueue_many(
                group_id=tenant.workspace.group_id, kind=PROJECT_CLAIM,
                payloads=[{"claim_id": 1}, {"claim_id": 2}],
            )  # fmt: skip
            job = OutboxJob.objects.filter(consumer=Consumer.INDEX).first()
            OutboxJob.objects.filter(pk=job.pk).update(status=OutboxJob.Status.DEAD)

    text = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").content.decode()

    assert _value(text, "vera_outbox_dead_letters", consumer="index") == 2
    assert 'vera_outbox_dead_letters{consumer="graph"} 0.0' in text


def test_an_ingest_run_is_counted_from_its_task_result_when_the_task_finishes() -> None:
    result = {"status": "ok", "new": 3, "unchanged": 2, "failed": 0,
              "claims": {"published": 5, "REPEATED": 1}, "error": ""}  # fmt: skip
    names = ("vera_ingest_runs_total", "vera_ingest_documents_total", "vera_ingest_claims_total")
    labels = ({"status": "ok"}, {"outcome": "new"}, {"status": "repeated"})
    before = [REGISTRY.get_sample_value(n, lb) or 0.0 for n, lb in zip(names, labels, strict=True)]

    task_postrun.send(sender=ingest_source, task_id="t-1", task=ingest_source, retval=result,
                      state="SUCCESS")  # fmt: skip

    after = [REGISTRY.get_sample_value(n, lb) or 0.0 for n, lb in zip(names, labels, strict=True)]
    assert [b - a for a, b in zip(before, after, strict=True)] == [1, 3, 1]
