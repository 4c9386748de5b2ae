"""Every extracted passage of a document becomes a claim, however alike the passages start.

Passages of a long, repetitive document (boilerplate, a repeated sentence) can share
their first few hundred characters and differ only at the end: they are different
statements and must stay different claims, each citing its own span.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest

from curation.domain.extraction import RuleBasedExtractor
from curation.domain.records import SourceRecord
from curation.domain.tiers import ClaimStatus
from curation.models import Claim, Episode, Evidence, Source
from curation.services.sources import source_create
from curation.tasks import process_outbox
from curation.usecases import ingest_now
from tenants import rls
from tests.support.tenancy import Tenant

pytestmark = pytest.mark.django_db

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
FILLER = "The quarterly report lists the office furniture inventory of each floor. " * 30
LEDGER = f"# Inventory A\n\n{FILLER}The ledger database is hosted in Frankfurt.\n"
CANTEEN = f"# Inventory B\n\n{FILLER}The canteen menu is planned in Lisbon.\n"


def _write(root: Path, name: str, text: str, *, at: dt.datetime = T0) -> None:
    (root / name).write_text(text, encoding="utf-8")
    os.utime(root / name, (at.timestamp(), at.timestamp()))


def _source(tenant: Tenant, root: Path) -> Source:
    principal = tenant.principal(tenant.admin)
    with rls.tenant_context(principal):
        return source_create(
            actor=principal, group_id=tenant.workspace.group_id, name="docs", kind="markdown",
            config={"root": str(root)}, trust_tier=1,
        )  # fmt: skip


def _extracted(name: str, title: str, text: str) -> list[tuple[tuple[int, int], str]]:
    record = SourceRecord(
        external_id=name, content=text.encode(), mime="text/markdown", title=title
    )
    claims = RuleBasedExtractor().extract(record, text)
    assert all(c.predicate == "STATES" and c.span is not None for c in claims)
    return [(c.span, c.fact_text) for c in claims if c.span is not None]


def _cited(tenant: Tenant, title: str) -> list[tuple[tuple[int, int], str, str]]:
    """(span, fact, status) of every claim citing the document's passages, in span order."""
    with rls.tenant_context(tenant.principal(tenant.admin)):
        rows = Evidence.objects.filter(
            claim__subject__canonical_name=title, claim__predicate="STATES"
        ).values_list("start", "end", "claim__fact_text", "claim__status")
        return sorted(((start, end), fact, status) for start, end, fact, status in rows)


def _current(tenant: Tenant, title: str) -> list[str]:
    with rls.tenant_context(tenant.principal(tenant.admin)):
        return list(
            Claim.objects.filter(
                subject__canonical_name=title, predicate="STATES", status=ClaimStatus.PUBLISHED
            )
            .order_by("pk")
            .values_list("fact_text", flat=True)
        )


def test_every_passage_of_a_repetitive_document_becomes_its_own_claim(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    _write(tmp_path, "ledger.md", LEDGER)
    _write(tmp_path, "canteen.md", CANTEEN)
    source = _source(tenant_a, tmp_path)
    report = ingest_now(source_id=source.pk, group_id=source.group_id)
    process_outbox()
    assert (report.new, report.failed, report.error) == (2, 0, "")
    for name, title, text, ending in [
        ("ledger.md", "Inventory A", LEDGER, "The ledger database is hosted in Frankfurt."),
        ("canteen.md", "Inventory B", CANTEEN, "The canteen menu is planned in Lisbon."),
    ]:
        extracted = _extracted(name, title, text)
        assert len(extracted) == 3
        # Passages 2 and 3 share their first 700 characters; only the end tells them apart.
        assert extracted[1][1][:700] == extracted[2][1][:700]
        assert extracted[2][1].endswith(ending)
        cited = _cited(tenant_a, title)
        assert [(span, fact) for span, fact, _ in cited] == extracted
        assert {status for _, _, status in cited} == {ClaimStatus.PUBLISHED}
        assert len(_current(tenant_a, title)) == 3
        with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
            episode = Episode.objects.get(source=source, external_id=name)
        assert episode.claims_count == 3
    assert dict(report.claims) == {ClaimStatus.PUBLISHED: 6}


def test_a_revised_ending_supersedes_only_the_passage_that_changed(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    _write(tmp_path, "ledger.md", LEDGER)
    source = _source(tenant_a, tmp_path)
    ingest_now(source_id=source.pk, group_id=source.group_id)
    before = _current(tenant_a, "Inventory A")
    assert len(before) == 3
    revised = LEDGER.replace("Frankfurt", "Dublin")
    _write(tmp_path, "ledger.md", revised, at=T0 + dt.timedelta(days=1))
    report = ingest_now(source_id=source.pk, group_id=source.group_id)
    process_outbox()
    assert (report.new, report.failed) == (1, 0)
    after = _current(tenant_a, "Inventory A")
    # The two unchanged passages are re-confirmed (the same claims), the third replaced.
    assert after[:2] == before[:2]
    assert after[2].endswith("The ledger database is hosted in Dublin.")
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        old = Claim.objects.get(fact_text=before[2])
    assert old.status == ClaimStatus.SUPERSEDED
    assert old.fact_text.endswith("hosted in Frankfurt.")


def test_a_passage_repeated_word_for_word_is_one_claim_and_is_counted(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    paragraph = "The ledger database keeps the double-entry books of every branch office."
    _write(tmp_path, "twice.md", f"# Twice\n\n{FILLER}\n\n{paragraph}\n\n{FILLER}\n\n{paragraph}\n")
    source = _source(tenant_a, tmp_path)
    report = ingest_now(source_id=source.pk, group_id=source.group_id)
    extracted = _extracted("twice.md", "Twice", (tmp_path / "twice.md").read_text())
    facts = [fact for _, fact in extracted]
    distinct = list(dict.fromkeys(facts))
    assert len(distinct) < len(facts)  # the document really repeats a passage
    assert sorted(_current(tenant_a, "Twice")) == sorted(distinct)
    # The repeat keeps its first citation only, and the run says how many repeats it saw.
    assert report.claims["repeated"] == len(facts) - len(distinct)
    assert report.claims[ClaimStatus.PUBLISHED] == len(distinct)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        episode = Episode.objects.get(source=source, external_id="twice.md")
    assert episode.claims_count == len(distinct)
