"""Progress of long runs: pure formatting, Source.progress of a real ingest, command output."""

from __future__ import annotations

import datetime as dt
import re
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from curation.domain.progress import describe_run
from curation.models import Source
from curation.services.sources import source_create
from curation.usecases import ingest_now
from kernel.progress import (
    ERASE_TO_END,
    Cadence,
    ProgressReporter,
    Snapshot,
    eta,
    format_bar,
    format_duration,
    format_line,
    rate,
)
from tenants import rls
from tests.support.clock import FakeClock
from tests.support.tenancy import Tenant

# --- pure: no database, milliseconds ---------------------------------------------------


def test_rate_is_unknown_before_time_passes() -> None:
    assert rate(10, 0.0) is None
    assert rate(10, 4.0) == 2.5


def test_eta_needs_a_total() -> None:
    assert eta(10, None, 5.0) is None


def test_eta_is_the_remainder_at_the_rate_so_far() -> None:
    assert eta(100, 400, 50.0) == pytest.approx(150.0)


def test_eta_is_unknown_before_anything_is_done() -> None:
    assert eta(0, 400, 5.0) is None


@pytest.mark.parametrize(
    ("seconds", "text"), [(0, "0s"), (42.4, "42s"), (185, "3m05s"), (7620, "2h07m")]
)
def test_durations_are_short(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


def test_line_with_a_total_shows_share_rate_and_eta() -> None:
    line = format_line(Snapshot(done=120, elapsed=10.0, total=400, unit="claims"))
    assert line == "120/400 claims (30%), 12.0 claims/s, ETA 23s, elapsed 10s"


def test_line_without_a_total_shows_no_eta_but_the_counters() -> None:
    snapshot = Snapshot(done=9, elapsed=3.0, counts={"new": 5, "unchanged": 3, "failed": 1})
    line = format_line(snapshot)
    assert line == "9 items, 3.0 items/s, elapsed 3s; new 5, unchanged 3, failed 1"


def test_bar_fills_with_the_share_done() -> None:
    bar = format_bar(Snapshot(done=50, elapsed=5.0, total=200), width=20)
    assert bar.startswith("[#####...............] 50/200  25% 10.0 items/s, ETA 15s")


def test_bar_without_a_total_counts_instead_of_filling() -> None:
    bar = format_bar(Snapshot(done=7, elapsed=0.0, unit="records"))
    assert bar == "[7 records] - records/s, elapsed 0s"


def test_cadence_is_due_every_period() -> None:
    cadence = Cadence(seconds=10)
    assert [cadence.due(done=n, now=t) for n, t in [(1, 0), (2, 5), (3, 10), (4, 15), (5, 21)]] == [
        False, False, True, False, True,
    ]  # fmt: skip


def test_cadence_is_due_every_n_items_even_within_a_period() -> None:
    cadence = Cadence(seconds=60, items=100)
    assert [cadence.due(done=n, now=1) for n in (0, 50, 100, 150, 200)] == [
        False, False, True, False, True,
    ]  # fmt: skip


def test_reporter_prints_plain_lines_off_a_terminal() -> None:
    clock, written = FakeClock(), []
    reporter = ProgressReporter(write=written.append, tty=False, cadence=Cadence(5), clock=clock)
    for done in range(1, 5):
        clock.advance(3)
        reporter.update(done, 4)
    reporter.finish()
    assert written == [
        "3/4 items (75%), 0.3 items/s, ETA 3s, elapsed 9s\n",
        "4/4 items (100%), 0.3 items/s, elapsed 12s\n",
    ]


def test_reporter_redraws_a_bar_in_place_on_a_terminal() -> None:
    clock, written = FakeClock(), []
    reporter = ProgressReporter(write=written.append, tty=True, clock=clock)
    for done in range(1, 4):
        clock.advance(1)
        reporter.update(done, 3)
    reporter.finish()
    assert all(text.startswith("\r[") and ERASE_TO_END in text for text in written)
    assert [text.endswith("\n") for text in written] == [False, False, False, True]


def test_reporter_says_nothing_when_nothing_happened() -> None:
    written: list[str] = []
    ProgressReporter(write=written.append, tty=False).finish()
    assert written == []


def test_a_run_is_described_with_its_counts_and_rate() -> None:
    progress = {
        "state": "running", "started_at": "2026-01-01T10:00:00+00:00",
        "updated_at": "2026-01-01T10:00:10+00:00", "pages": 3, "records": 30, "new": 20,
        "unchanged": 8, "failed": 2, "total": None,
    }  # fmt: skip
    assert describe_run(progress) == (
        "running: 30 records, 3.0 records/s, elapsed 10s; new 20, unchanged 8, failed 2, "
        "pages 3 (updated 2026-01-01 10:00:10 UTC)"
    )


def test_a_source_that_never_ran_says_so() -> None:
    assert describe_run({}) == "no run yet"


# --- integration: a real ingest and the commands -----------------------------------------


@pytest.fixture
def docs_source(tenant_a: Tenant, tmp_path: Path) -> Source:
    (tmp_path / "billing.md").write_text("# Billing\n\nThe billing-api runs on k8s-prod-1.\n")
    (tmp_path / "ledger.md").write_text("# Ledger\n\nLedger keeps the books for Acme.\n")
    (tmp_path / "latin1.md").write_bytes("caf\xe9".encode("latin-1"))
    principal = tenant_a.principal(tenant_a.admin)
    with rls.tenant_context(principal):
        return source_create(
            actor=principal, group_id=tenant_a.workspace.group_id, name="docs", kind="markdown",
            config={"root": str(tmp_path)}, trust_tier=1,
        )  # fmt: skip


def _progress(tenant: Tenant, source: Source) -> dict:
    with rls.tenant_context(tenant.principal(tenant.admin)):
        return Source.objects.values_list("progress", flat=True).get(pk=source.pk)


@pytest.mark.django_db
def test_an_ingest_leaves_its_progress_finished_with_its_counts(
    tenant_a: Tenant, docs_source: Source
) -> None:
    ingest_now(source_id=docs_source.pk, group_id=docs_source.group_id)
    progress = _progress(tenant_a, docs_source)
    assert progress["state"] == "finished"
    counts = {k: progress[k] for k in ("records", "new", "unchanged", "failed")}
    assert counts == {"records": 3, "new": 2, "unchanged": 0, "failed": 1}
    assert progress["pages"] >= 1
    started = dt.datetime.fromisoformat(progress["started_at"])
    assert started <= dt.datetime.fromisoformat(progress["updated_at"])


@pytest.mark.django_db
def test_a_second_ingest_counts_unchanged_records(tenant_a: Tenant, docs_source: Source) -> None:
    ingest_now(source_id=docs_source.pk, group_id=docs_source.group_id)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        Source.objects.filter(pk=docs_source.pk).update(cursor=None)
    ingest_now(source_id=docs_source.pk, group_id=docs_source.group_id)
    progress = _progress(tenant_a, docs_source)
    assert (progress["new"], progress["unchanged"], progress["failed"]) == (0, 3, 0)


@pytest.mark.django_db
def test_a_run_that_cannot_start_leaves_its_progress_failed(
    tenant_a: Tenant, docs_source: Source
) -> None:
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        Source.objects.filter(pk=docs_source.pk).update(kind="jira", config={})
    ingest_now(source_id=docs_source.pk, group_id=docs_source.group_id)
    assert _progress(tenant_a, docs_source)["state"] == "failed"


PROGRESS_LINE = re.compile(r"^\d+ records, [\d.]+ records/s, elapsed \d+s; new \d+", re.M)


@pytest.mark.django_db
def test_ingest_command_prints_progress_lines_off_a_terminal(docs_source: Source) -> None:
    out = StringIO()
    call_command("ingest", str(docs_source.pk), "--progress-every", "0", stdout=out)
    lines = PROGRESS_LINE.findall(out.getvalue())
    assert len(lines) >= 2  # one per page, then the final state
    assert "\r" not in out.getvalue()
    assert re.search(r"^source \d+: 2 new, 0 unchanged, 1 failed episodes", out.getvalue(), re.M)


@pytest.mark.django_db
def test_search_reindex_prints_progress_lines_off_a_terminal(
    tenant_a: Tenant, docs_source: Source
) -> None:
    ingest_now(source_id=docs_source.pk, group_id=docs_source.group_id)
    out = StringIO()
    call_command(
        "search_reindex", "--group", tenant_a.workspace.group_id, "--progress-every", "0",
        stdout=out,
    )  # fmt: skip
    assert re.search(r"^(\d+)/\1 claims \(100%\), [\d.]+ claims/s", out.getvalue(), re.M)
    assert "indexed" in out.getvalue()


class Terminal(StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.mark.django_db
def test_ingest_command_draws_a_bar_on_a_terminal(docs_source: Source) -> None:
    out = Terminal()
    call_command("ingest", str(docs_source.pk), stdout=out)
    assert re.search(r"\r\[3 records\] [\d.]+ records/s, elapsed \d+s; new 2", out.getvalue())
    assert "\x1b[K\nsource" in out.getvalue()  # the bar's line ends before the summary
