"""Supersession follows valid time, not arrival order.

One functional predicate's timeline (payments-api ran on six clusters in turn, 2019 to
2024) arrives shuffled, one document per ingest run, each document written after the
last and declaring in its front matter from when its fact held. Every `as_of` answer
(the claims selector and search) must be the value of the timeline at that instant, the
current value the last one, the history in time order.
"""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

import pytest
from django.utils import timezone

from curation.models import Claim
from curation.selectors import claim_history, claims_valid
from curation.tasks import process_outbox
from curation.usecases import ingest_now
from retrieval import bootstrap as retrieval_bootstrap
from retrieval.domain.query import Query
from tenants import rls
from tests.support.ingest import ingest_cmdb, write_at
from tests.support.tenancy import Tenant, markdown_source

pytestmark = pytest.mark.django_db

STARTS = [
    dt.datetime(2019, 1, 1, tzinfo=dt.UTC),
    dt.datetime(2020, 3, 1, tzinfo=dt.UTC),
    dt.datetime(2021, 6, 1, tzinfo=dt.UTC),
    dt.datetime(2022, 2, 1, tzinfo=dt.UTC),
    dt.datetime(2023, 9, 1, tzinfo=dt.UTC),
    dt.datetime(2024, 3, 1, tzinfo=dt.UTC),
]

ARRIVED = dt.datetime(2026, 6, 1, tzinfo=dt.UTC)  # when the documents were written, in turn


def _value_at(tenant: Tenant, instant: dt.datetime | None) -> list[str]:
    with rls.tenant_context(tenant.principal(tenant.viewer)):
        return sorted(
            claims_valid(as_of=instant)
            .filter(subject__canonical_name="payments-api", predicate="RUNS_ON")
            .values_list("object_entity__canonical_name", flat=True)
        )


def _searched_at(tenant: Tenant, instant: dt.datetime) -> str | None:
    """The cluster of the best RUNS_ON hit of a search as of `instant`."""
    with rls.tenant_context(tenant.principal(tenant.viewer)):
        result = retrieval_bootstrap.search()(
            query=Query(text="where does payments-api run", k=10, as_of=instant),
            now=timezone.now(),
        )
        for hit in result.hits:
            claim = Claim.objects.select_related("object_entity").get(pk=hit.claim_id)
            if claim.predicate == "RUNS_ON":
                return claim.object_entity.canonical_name if claim.object_entity else None
    return None


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_shuffled_timeline_answers_every_as_of_from_valid_time(
    seed: int, tenant_a: Tenant, tmp_path: Path
) -> None:
    order = list(range(len(STARTS)))
    random.Random(seed).shuffle(order)  # noqa: S311 - a test's order, not a secret
    source_id = markdown_source(tenant_a, tmp_path, tier=1)
    for arrival, i in enumerate(order):
        # One document per run, written (record time) in arrival order; the front matter
        # says from when its fact held (valid time).
        text = (
            f"---\nvalid_from: {STARTS[i]:%Y-%m-%d}\n---\n# Move {i}\n\n"
            f"The payments-api runs on k8s-{i}.\n"
        )
        write_at(tmp_path, f"v{i}.md", text, ARRIVED + dt.timedelta(hours=arrival))
        report = ingest_now(source_id=source_id, group_id=tenant_a.workspace.group_id)
        assert not report.error, report.error
    while process_outbox():
        pass

    assert _value_at(tenant_a, None) == ["k8s-5"], order  # now: the latest in valid time
    assert _value_at(tenant_a, STARTS[0] - dt.timedelta(days=1)) == []
    for i, start in enumerate(STARTS):
        instant = start + dt.timedelta(days=20)
        assert _value_at(tenant_a, instant) == [f"k8s-{i}"], (order, i)
    for i in (0, 2, 4):
        assert _searched_at(tenant_a, STARTS[i] + dt.timedelta(days=20)) == f"k8s-{i}", order
    with rls.tenant_context(tenant_a.principal(tenant_a.viewer)):
        any_claim = Claim.objects.filter(predicate="RUNS_ON").first()
        assert any_claim is not None
        history = claim_history(claim_id=any_claim.pk)
        values = [c.object_entity.canonical_name for c in history if c.object_entity]
    assert values == [f"k8s-{i}" for i in range(len(STARTS))]
    # Each value ends exactly where the next begins; the last is open.
    assert [(c.valid_from, c.valid_to) for c in history] == [
        (start, STARTS[i + 1] if i + 1 < len(STARTS) else None) for i, start in enumerate(STARTS)
    ]


def test_dates_written_in_the_sentences_set_each_claims_validity(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    source_id = markdown_source(tenant_a, tmp_path, tier=1)
    write_at(
        tmp_path, "history.md",
        "# Billing history\n\nThe billing-api ran on k8s-old from March 2021 to June 2023. "
        "The billing-api runs on k8s-new since June 2023. "
        "The ledger-db runs on k8s-db since last spring.\n",
        ARRIVED,
    )  # fmt: skip
    report = ingest_now(source_id=source_id, group_id=tenant_a.workspace.group_id)
    assert not report.error, report.error
    while process_outbox():
        pass

    def where(instant: dt.datetime | None) -> list[str]:
        with rls.tenant_context(tenant_a.principal(tenant_a.viewer)):
            return sorted(
                claims_valid(as_of=instant)
                .filter(subject__canonical_name="billing-api", predicate="RUNS_ON")
                .values_list("object_entity__canonical_name", flat=True)
            )

    assert where(None) == ["k8s-new"]
    assert where(dt.datetime(2021, 2, 1, tzinfo=dt.UTC)) == []
    assert where(dt.datetime(2022, 1, 1, tzinfo=dt.UTC)) == ["k8s-old"]
    assert where(dt.datetime(2024, 1, 1, tzinfo=dt.UTC)) == ["k8s-new"]
    with rls.tenant_context(tenant_a.principal(tenant_a.viewer)):
        old = Claim.objects.get(object_entity__canonical_name="k8s-old")
        vague = Claim.objects.get(object_entity__canonical_name="k8s-db")
    assert (old.status, old.valid_to) == ("superseded", dt.datetime(2023, 6, 1, tzinfo=dt.UTC))
    assert old.status_reason == "ended 2023-06-01, as the record says"
    # A vague date is not guessed: record time, and the reason says so.
    assert vague.valid_from == ARRIVED
    assert "'since last spring' is not a date: record time used" in vague.status_reason


def test_cmdb_columns_named_by_the_source_give_each_records_validity(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    export = (
        "id,name,host,in_service,retired\n"
        "ci-1,payments-api,k8s-a,2019-01-01,2024-03-01\n"
        "ci-2,ledger,k8s-b,sometime in 2020,\n"
    )
    ingest_cmdb(
        tenant_a, tmp_path / "cmdb.csv", export,
        valid_from_field="In_Service", valid_to_field="retired",
    )  # fmt: skip
    principal = tenant_a.principal(tenant_a.admin)

    def host_of(name: str, instant: dt.datetime | None) -> list[str]:
        with rls.tenant_context(principal):
            return list(
                claims_valid(as_of=instant)
                .filter(subject__canonical_name=name, predicate="RUNS_ON")
                .values_list("object_entity__canonical_name", flat=True)
            )

    assert host_of("payments-api", dt.datetime(2020, 6, 1, tzinfo=dt.UTC)) == ["k8s-a"]
    assert host_of("payments-api", dt.datetime(2018, 6, 1, tzinfo=dt.UTC)) == []
    assert host_of("payments-api", None) == []  # retired in 2024: history, not current
    assert host_of("ledger", None) == ["k8s-b"]
    with rls.tenant_context(principal):
        ledger = Claim.objects.get(subject__canonical_name="ledger", predicate="RUNS_ON")
    assert "in_service 'sometime in 2020' is not a date: record time used" in ledger.status_reason
