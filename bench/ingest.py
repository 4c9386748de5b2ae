"""Ingestion benchmark: Markdown documents from cold, then an unchanged re-run.

    .venv/bin/python -m bench.ingest [--docs 10000] [--scifact-only]

The corpus is SciFact's 5,183 abstracts (../shared/eval/scifact) plus generated
operations notes up to --docs. Everything goes through the real pipeline: connector,
object store, episodes, rule extractor, entity resolution, tier decision, outbox.
Prints figures; asserts nothing about time. Checks (exit 1 if broken): every document
yields at least one published, cited claim, and the re-run creates nothing.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

from bench.common import ROOT, bench_workspace, markdown_source, setup_django, timed

SCIFACT = ROOT.parent / "shared" / "eval" / "scifact" / "corpus.jsonl"
TEAMS = ["Payments", "Platform", "Search", "Identity", "Data", "Mobile", "Billing", "Ledger"]


def write_corpus(target: Path, *, docs: int, scifact_only: bool) -> int:
    """Write the Markdown files; returns how many."""
    if target.exists():
        shutil.rmtree(target)
    (target / "scifact").mkdir(parents=True)
    count = 0
    with SCIFACT.open(encoding="utf-8") as handle:
        for line in handle:
            if count >= docs:
                break
            row = json.loads(line)
            body = f"# {row['title']}\n\n{row['text']}\n"
            (target / "scifact" / f"{row['_id']}.md").write_text(body, encoding="utf-8")
            count += 1
    if scifact_only:
        return count
    (target / "ops").mkdir()
    for i in range(max(docs - count, 0)):
        team = TEAMS[i % len(TEAMS)]
        text = (
            f"# svc-{i} runbook\n\n"
            f"The svc-{i} service runs on node-{i % 97}. It depends on svc-{(i * 7 + 3) % 4000}.\n"
            f"svc-{i} is owned by the {team} team and is written in Go.\n\n"
            f"Dịch vụ svc-{i} lưu dữ liệu trong cụm PostgreSQL số {i % 11}.\n"
        )
        (target / "ops" / f"svc-{i}.md").write_text(text, encoding="utf-8")
        count += 1
    return count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--scifact-only", action="store_true")
    args = parser.parse_args()
    setup_django()

    from curation.domain.tiers import ClaimStatus
    from curation.models import Claim, Episode, Source
    from curation.usecases import ingest_now
    from tenants import rls

    # Outside any git work tree, so the connector reads the folder by mtime.
    corpus = Path(tempfile.gettempdir()) / "vera-bench-docs"
    total = write_corpus(corpus, docs=args.docs, scifact_only=args.scifact_only)
    workspace, principal = bench_workspace("Bench Org", "Bench WS")
    source_id = markdown_source(principal, workspace.group_id, corpus, name="bench-docs")

    with timed() as cold:
        first = ingest_now(source_id=source_id, group_id=workspace.group_id)
    claims = sum(first.claims.values())
    print(f"documents        {total}")
    print(f"cold run         {cold[0]:.1f} s  {first.new / cold[0]:.1f} documents/s  "
          f"{claims / cold[0]:.1f} claims/s  ({first.new} episodes, {claims} claims, "
          f"{first.failed} failed)")  # fmt: skip
    print(f"claims by status {dict(first.claims)}")

    with rls.tenant_context(principal):
        Source.objects.filter(pk=source_id).update(cursor=None)  # force a full re-read
        before = (Episode.objects.count(), Claim.objects.count())
    with timed() as warm:
        second = ingest_now(source_id=source_id, group_id=workspace.group_id)
    with rls.tenant_context(principal):
        after = (Episode.objects.count(), Claim.objects.count())
        uncited = Episode.objects.filter(claims_count=0).count()
        unpublished_docs = (
            Episode.objects.exclude(evidence__claim__status=ClaimStatus.PUBLISHED)
            .distinct()
            .count()
        )
    print(f"unchanged re-run {warm[0]:.1f} s  ({second.unchanged} unchanged, {second.new} new)")
    print(f"episodes/claims  before {before}  after {after}")
    print(f"documents without a published, cited claim: {unpublished_docs} (zero-claim: {uncited})")
    ok = (
        first.new == total
        and before == after
        and second.new == 0
        and unpublished_docs == 0
        and first.failed == 0
    )
    print("checks           " + ("ok" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
