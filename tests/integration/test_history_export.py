"""A history export loads whole: one item's rows over time become its timeline.

A CMDB source with `valid_from_field` reads a shuffled export in which an item has one
row per period: svc-a three (its host moves each time, its DEPENDS_ON list shrinks, its
owner changes once), svc-b two, svc-c one, and one row that repeats svc-b's id and
instant. Real connector, pipeline, outbox, index, FalkorDB and RLS: every `as_of` in a
period answers that period's values (claims, search, `related`), now answers the last,
no answer now cites a value that ended, the repeated row fails alone with its reason,
and running again (the same rows in another order) changes nothing.
"""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

import pytest
from django.test import Client
from django.utils import timezone

from curation import bootstrap
from curation.domain.tiers import ClaimStatus
from curation.models import Claim, Entity, Episode, EpisodeStatus, Source
from curation.selectors import claims_valid
from curation.services.reprocess import reprocess_start
from curation.services.review import review_approve
from curation.usecases import reprocess_now
from retrieval import bootstrap as retrieval_bootstrap
from retrieval.domain.query import Query
from tenants import rls
from tests.support.ingest import drain_outbox, ingest_run
from tests.support.snapshots import sealed_snapshot
from tests.support.tenancy import Tenant, cmdb_source

pytestmark = pytest.mark.django_db

HEADER = "id,name,host,owner,depends_on,since,zone"
# (id, host, owner, depends_on, since, zone): svc-a's list shrinks from three to one;
# the zone is not read until a test maps it.
ROWS = [
    ("A1", "svc-a", "k8s-a1", "team-x", "db-1;cache-1;queue-1", "2020-01-01", "z-1"),
    ("A1", "svc-a", "k8s-a2", "team-x", "db-1;cache-1", "2021-06-01", "z-1"),
    ("A1", "svc-a", "k8s-a3", "team-y", "db-1", "2023-03-01", "z-2"),
    ("B1", "svc-b", "k8s-b1", "team-z", "", "2019-05-01", "z-3"),
    ("B1", "svc-b", "k8s-b2", "team-z", "", "2022-09-01", "z-4"),
    ("C1", "svc-c", "k8s-c1", "team-z", "db-1", "2021-01-01", "z-5"),
]
DUPLICATE = ("B1", "svc-b", "k8s-bx", "team-z", "", "2022-09-01", "z-3")


def _day(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC)


# For each item, each period's expected values: (from, host, owner, depends_on).
TIMELINE = {
    "svc-a": [
        (_day("2020-01-01"), "k8s-a1", "team-x", {"db-1", "cache-1", "queue-1"}),
        (_day("2021-06-01"), "k8s-a2", "team-x", {"db-1", "cache-1"}),
        (_day("2023-03-01"), "k8s-a3", "team-y", {"db-1"}),
    ],
    "svc-b": [
        (_day("2019-05-01"), "k8s-b1", "team-z", set()),
        (_day("2022-09-01"), "k8s-b2", "team-z", set()),
    ],
    "svc-c": [(_day("2021-01-01"), "k8s-c1", "team-z", {"db-1"})],
}


def _export(
    path: Path, rows: list[tuple[str, ...]], *, seed: int, last: tuple[str, ...] = DUPLICATE
) -> None:
    """The rows shuffled, then `last` (the repeated row: the one read first is kept)."""
    shuffled = list(rows)
    random.Random(seed).shuffle(shuffled)  # noqa: S311 - a test's order, not a secret
    shuffled.append(last)
    lines = [HEADER, *(",".join(f'"{cell}"' for cell in row) for row in shuffled)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _midpoints() -> list[tuple[str, int, dt.datetime]]:
    """(item, period, an instant inside the period) for every period of every item."""
    out = []
    for name, periods in TIMELINE.items():
        for n, (start, *_) in enumerate(periods):
            out.append((name, n, start + dt.timedelta(days=30)))
    return out


def _values(tenant: Tenant, name: str, predicate: str, as_of: dt.datetime | None) -> set[str]:
    with rls.tenant_context(tenant.principal(tenant.viewer)):
        return set(
            claims_valid(as_of=as_of)
            .filter(subject__canonical_name=name, predicate=predicate)
            .values_list("object_entity__canonical_name", flat=True)
        )


def _assert_timeline(tenant: Tenant) -> None:
    for name, n, instant in _midpoints():
        _, host, owner, depends = TIMELINE[name][n]
        assert _values(tenant, name, "RUNS_ON", instant) == {host}, (name, instant)
        assert _values(tenant, name, "OWNED_BY", instant) == {owner}, (name, instant)
        assert _values(tenant, name, "DEPENDS_ON", instant) == depends, (name, instant)
    for name, periods in TIMELINE.items():
        _, host, owner, depends = periods[-1]
        assert _values(tenant, name, "RUNS_ON", None) == {host}
        assert _values(tenant, name, "OWNED_BY", None) == {owner}
        assert _values(tenant, name, "DEPENDS_ON", None) == depends
        before = periods[0][0] - dt.timedelta(days=1)
        assert _values(tenant, name, "RUNS_ON", before) == set()


def _intervals(tenant: Tenant) -> list[tuple[object, ...]]:
    with rls.tenant_context(tenant.principal(tenant.admin)):
        return list(
            Claim.objects.order_by("pk").values_list(
                "pk", "status", "valid_from", "valid_to", "version"
            )
        )


def _load(tenant: Tenant, export: Path, *, seed: int, tier: int = 1) -> tuple[int, object]:
    _export(export, ROWS, seed=seed)
    source_id = cmdb_source(tenant, export, tier=tier, valid_from_field="since")
    report = ingest_run(source_id=source_id, group_id=tenant.workspace.group_id)
    drain_outbox()
    return source_id, report


@pytest.mark.parametrize("seed", [1, 2])
def test_a_shuffled_history_export_answers_every_period_and_fails_the_duplicate_alone(
    seed: int, tenant_a: Tenant, tmp_path: Path
) -> None:
    source_id, report = _load(tenant_a, tmp_path / "cmdb.csv", seed=seed)

    assert (report.new, report.failed) == (len(ROWS), 1), report.failures
    [(failed_id, reason)] = report.failures
    assert failed_id.startswith("B1@line ")
    assert "repeats id 'B1' and since 2022-09-01T00:00:00+00:00 (first on line" in reason
    _assert_timeline(tenant_a)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        # Each version's episode cites the line it was read from, and its instant.
        versions = Episode.objects.filter(
            source_id=source_id, external_id="A1", status=EpisodeStatus.PROCESSED
        ).order_by("version_from")
        assert [e.version_from for e in versions] == [p[0] for p in TIMELINE["svc-a"]]
        assert all(e.location.startswith("line ") for e in versions)
        # The item is one entity over time, not one per row.
        assert Entity.objects.filter(canonical_name="svc-a").count() == 1


def test_running_the_same_history_again_changes_nothing_in_any_order(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    export = tmp_path / "cmdb.csv"
    source_id, _ = _load(tenant_a, export, seed=3)
    before = _intervals(tenant_a)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        Source.objects.filter(pk=source_id).update(cursor=None)  # read every row again

    again = ingest_run(source_id=source_id, group_id=tenant_a.workspace.group_id)
    _export(export, ROWS, seed=4)  # the same rows in another order: new bytes
    reordered = ingest_run(source_id=source_id, group_id=tenant_a.workspace.group_id)

    assert (again.new, again.failed, again.unchanged) == (0, 0, len(ROWS) + 1)
    # The repeated row is the same bytes at the same line: its failure is recorded once.
    assert (reordered.new, reordered.failed, reordered.unchanged) == (0, 0, len(ROWS) + 1)
    assert _intervals(tenant_a) == before


def test_an_export_with_one_more_period_appends_it_to_the_timeline(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    export = tmp_path / "cmdb.csv"
    source_id, _ = _load(tenant_a, export, seed=5)
    later = ("B1", "svc-b", "k8s-b3", "team-z", "", "2024-11-01", "z-4")
    older = ("C1", "svc-c", "k8s-c0", "team-z", "", "2020-02-01", "z-5")  # a period found late

    _export(export, [*ROWS, later], seed=6, last=older)
    report = ingest_run(source_id=source_id, group_id=tenant_a.workspace.group_id)
    drain_outbox()

    assert (report.new, report.failed) == (2, 0), report.failures
    assert _values(tenant_a, "svc-b", "RUNS_ON", None) == {"k8s-b3"}
    assert _values(tenant_a, "svc-b", "RUNS_ON", _day("2023-01-01")) == {"k8s-b2"}
    # The late period holds until the version after it, and says no DEPENDS_ON then.
    assert _values(tenant_a, "svc-c", "RUNS_ON", _day("2020-06-01")) == {"k8s-c0"}
    assert _values(tenant_a, "svc-c", "DEPENDS_ON", _day("2020-06-01")) == set()
    assert _values(tenant_a, "svc-c", "RUNS_ON", None) == {"k8s-c1"}
    assert _values(tenant_a, "svc-c", "DEPENDS_ON", None) == {"db-1"}


def _cited_host(tenant: Tenant, name: str, as_of: dt.datetime | None) -> tuple[str | None, list]:
    """The host of the best RUNS_ON hit of "where does <name> run" as of the instant, and
    every claim any hit cites."""
    with rls.tenant_context(tenant.principal(tenant.viewer)):
        result = retrieval_bootstrap.search()(
            query=Query(text=f"where does {name} run", k=10, as_of=as_of), now=timezone.now()
        )
        claims = list(
            Claim.objects.filter(pk__in=[hit.claim_id for hit in result.hits]).select_related(
                "object_entity"
            )
        )
    by_id = {claim.pk: claim for claim in claims}
    first = next(
        (by_id[hit.claim_id] for hit in result.hits if by_id[hit.claim_id].predicate == "RUNS_ON"),
        None,
    )
    host = first.object_entity.canonical_name if first and first.object_entity else None
    return host, claims


def test_search_answers_each_period_and_cites_nothing_stale_now(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    _load(tenant_a, tmp_path / "cmdb.csv", seed=7)

    for name, n, instant in _midpoints():
        host, _ = _cited_host(tenant_a, name, instant)
        assert host == TIMELINE[name][n][1], (name, instant)
    for name, periods in TIMELINE.items():
        host, cited = _cited_host(tenant_a, name, None)
        assert host == periods[-1][1]
        stale = [c.fact_text for c in cited if c.status != ClaimStatus.PUBLISHED]
        assert stale == [], stale


def test_related_walks_each_period_of_the_history_from_the_graph(
    tenant_a: Tenant, tmp_path: Path, client: Client
) -> None:
    bootstrap.providers().graph().clear()
    _load(tenant_a, tmp_path / "cmdb.csv", seed=8)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        svc_a = Entity.objects.get(canonical_name="svc-a")
    client.force_login(tenant_a.viewer)

    def neighbours(as_of: dt.datetime | None) -> set[str]:
        params = {} if as_of is None else {"as_of": as_of.isoformat()}
        response = client.get(f"/api/v1/entities/{svc_a.pk}/related", params)
        assert response.status_code == 200, response.content
        return {path["name"] for path in response.json()["neighbours"]}

    for start, host, owner, depends in TIMELINE["svc-a"]:
        assert neighbours(start + dt.timedelta(days=30)) == {host, owner, *depends}
    _, host, owner, depends = TIMELINE["svc-a"][-1]
    assert neighbours(None) == {host, owner, *depends}


def test_a_tier3_history_queues_each_fact_once_with_its_interval(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    _load(tenant_a, tmp_path / "cmdb.csv", seed=9, tier=3)
    admin = tenant_a.principal(tenant_a.admin)
    with rls.tenant_context(admin):
        queued = list(
            Claim.objects.filter(status=ClaimStatus.PENDING_REVIEW, subject__canonical_name="svc-a")
            .order_by("pk")
            .values_list("predicate", "object_entity__canonical_name", "valid_from", "valid_to")
        )
    # One entry per fact and interval, in valid-time order; db-1 spans all three.
    a1, a2, a3 = (p[0] for p in TIMELINE["svc-a"])
    assert sorted(queued) == sorted([
        ("RUNS_ON", "k8s-a1", a1, a2), ("RUNS_ON", "k8s-a2", a2, a3),
        ("RUNS_ON", "k8s-a3", a3, None),
        ("OWNED_BY", "team-x", a1, a3), ("OWNED_BY", "team-y", a3, None),
        ("DEPENDS_ON", "db-1", a1, None), ("DEPENDS_ON", "cache-1", a1, a3),
        ("DEPENDS_ON", "queue-1", a1, a2),
    ])  # fmt: skip
    assert [row[2] for row in queued] == sorted(row[2] for row in queued)

    with rls.tenant_context(admin):
        waiting = list(
            Claim.objects.filter(status=ClaimStatus.PENDING_REVIEW)
            .order_by("pk")
            .values_list("pk", "version")
        )
    for claim_id, version in waiting:
        with rls.tenant_context(admin):
            review_approve(claim_id=claim_id, actor=admin, version=version)
    drain_outbox()
    _assert_timeline(tenant_a)


def test_the_review_queue_shows_each_versions_interval_and_no_false_conflict(
    tenant_a: Tenant, tmp_path: Path, client: Client
) -> None:
    _load(tenant_a, tmp_path / "cmdb.csv", seed=10, tier=3)
    admin = tenant_a.principal(tenant_a.admin)
    with rls.tenant_context(admin):
        newest = Claim.objects.get(object_entity__canonical_name="k8s-a3")
    with rls.tenant_context(admin):
        review_approve(claim_id=newest.pk, actor=admin, version=newest.version)
    client.force_login(tenant_a.reviewer)

    page = client.get("/review/", {"queue": "claims", "per_page": 100}).content.decode()

    assert "svc-a runs on k8s-a1." in page
    assert "valid from 2020-01-01 until 2021-06-01" in page  # k8s-a1's period
    assert "valid from 2021-06-01 until 2023-03-01" in page  # k8s-a2's
    # Approving a past period publishes history: it does not replace k8s-a3, so the
    # queue shows no "now published" value to strike out for svc-a's host.
    assert "<del>svc-a runs on k8s-a3.</del>" not in page
    assert "stays current: this claim is about an earlier time" in page
    assert "line " in page  # each citation names the line its version was read from


def test_reprocessing_a_history_reads_every_version_and_keeps_the_timelines(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    source_id, _ = _load(tenant_a, tmp_path / "cmdb.csv", seed=11)
    admin = tenant_a.principal(tenant_a.admin)
    with rls.tenant_context(admin):
        source = Source.objects.get(pk=source_id)
        # Today's reading also maps the zone: every period's zone must land in its period.
        Source.objects.filter(pk=source_id).update(
            config={**source.config, "mapping": {"zone": "HOSTED_IN"}}
        )
        source.refresh_from_db()
        adapters = bootstrap.providers().read_adapters_for(source)
        run = reprocess_start(actor=admin, source_id=source_id, adapters=adapters)

    run = reprocess_now(run_id=run.pk, group_id=tenant_a.workspace.group_id)
    drain_outbox()

    assert run.status == "finished", run.error
    assert run.counts["documents"] == len(ROWS)  # every version, not each item's last
    _assert_timeline(tenant_a)
    zones = {
        ("svc-a", "2020-06-01"): {"z-1"}, ("svc-a", "2022-01-01"): {"z-1"},
        ("svc-a", "2024-01-01"): {"z-2"}, ("svc-b", "2020-01-01"): {"z-3"},
        ("svc-b", "2023-01-01"): {"z-4"}, ("svc-c", "2022-01-01"): {"z-5"},
    }  # fmt: skip
    for (name, day), zone in zones.items():
        assert _values(tenant_a, name, "HOSTED_IN", _day(day)) == zone, (name, day)
    assert _values(tenant_a, "svc-a", "HOSTED_IN", None) == {"z-2"}


@pytest.mark.django_db(transaction=True)  # a snapshot is built in its own transaction
def test_a_sealed_snapshot_answers_each_period_as_the_live_index_does(
    tenant_a: Tenant, tmp_path: Path, client: Client
) -> None:
    _load(tenant_a, tmp_path / "cmdb.csv", seed=12)
    snapshot = sealed_snapshot(tenant_a, name="after the history")
    client.force_login(tenant_a.viewer)

    def first_host(name: str, as_of: dt.datetime | None) -> str:
        params = {"q": f"where does {name} run", "k": 10, "snapshot": snapshot.pk}
        if as_of is not None:
            params["as_of"] = as_of.isoformat()
        response = client.get("/api/v1/search", params)
        assert response.status_code == 200, response.content
        return next(h["object"] for h in response.json()["hits"] if h["predicate"] == "RUNS_ON")

    for name, n, instant in _midpoints():
        assert first_host(name, instant) == TIMELINE[name][n][1], (name, instant)
    for name, periods in TIMELINE.items():
        assert first_host(name, None) == periods[-1][1]


def test_a_date_written_in_the_question_answers_that_period_and_is_not_dropped(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    _load(tenant_a, tmp_path / "cmdb.csv", seed=13)
    asked = {
        "where did svc-a run on 1 July 2021": "k8s-a2",
        "where did svc-a run as of February 3, 2020": "k8s-a1",
        "where did svc-b run on 2020-06-30": "k8s-b1",
    }
    with rls.tenant_context(tenant_a.principal(tenant_a.viewer)):
        for question, host in asked.items():
            result = retrieval_bootstrap.search()(
                query=Query(text=question, k=10), now=timezone.now()
            )
            assert result.understood.time_fallback == "", question
            first = Claim.objects.get(pk=result.hits[0].claim_id)
            assert (first.predicate, str(first.object_entity)) == ("RUNS_ON", host), question


def test_a_date_before_an_items_history_searches_without_it_and_says_why(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    _load(tenant_a, tmp_path / "cmdb.csv", seed=13)
    with rls.tenant_context(tenant_a.principal(tenant_a.viewer)):
        result = retrieval_bootstrap.search()(
            query=Query(text="where did svc-a run in 2001", k=10), now=timezone.now()
        )
    assert result.understood.time_fallback == (
        "nothing about svc-a was valid as of 2001-12-31 ('in 2001'): searched without it"
    )
    assert result.hits, "the time is not a wall: the current facts still answer"
