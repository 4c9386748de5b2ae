"""Reprocessing benchmark: SciFact's abstracts ingested, then read again from storage.

    .venv/bin/python -m bench.reprocess [--docs 5183] [--batch 20]

The corpus is SciFact's 5,183 abstracts (../shared/eval/scifact) as Markdown, ingested
through the real pipeline into a fresh database. Then three reprocessing runs of the
source, each through `reprocess_start` + `reprocess_run` as the task and the command
run them, reading every document's bytes back from the object store:

1. today's version, nothing outdated: finds no work (idempotence);
2. `everything`: every document re-read by the same extractors (all claims kept);
3. a changed extractor (passages cut at 400 characters instead of 800): passages
   vanish and new ones appear (withdrawn through the lifecycle, recorded by the tier
   rules), so every document changes.

Prints documents/s and what each run did; asserts nothing about time. Checks (exit 1
if broken): run 1 reads nothing, run 2 keeps every claim and withdraws none, run 3
reads every document and leaves each with cited claims, and a rerun of 3 reads nothing.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from bench.common import setup_django, timed
from bench.ingest import write_corpus


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", type=int, default=5183)
    parser.add_argument("--batch", type=int, default=20, help="documents per commit")
    args = parser.parse_args()
    setup_django()

    from curation.domain.extraction.rules import RuleBasedExtractor
    from curation.models import Claim, Episode, EpisodeStatus
    from curation.ports import Extractor
    from curation.usecases import ingest_now, reprocess_begin, reprocess_now, source_create
    from tenants import rls
    from tenants.domain.scopes import ScopeKind
    from tenants.selectors import principal_system
    from tenants.usecases import scope_create

    corpus = Path(tempfile.gettempdir()) / "vera-bench-reprocess"
    total = write_corpus(corpus, docs=args.docs, scifact_only=True)
    org = scope_create(kind=ScopeKind.ORGANISATION, name="Bench Org")
    workspace = scope_create(kind=ScopeKind.WORKSPACE, name="Bench WS", parent_id=org.pk)
    principal = principal_system("bench", group_ids=[workspace.group_id])
    with rls.tenant_context(principal):
        source = source_create(
            actor=principal, group_id=workspace.group_id, name="scifact", kind="markdown",
            config={"root": str(corpus)}, trust_tier=1,
        )  # fmt: skip
    with timed() as cold:
        report = ingest_now(source_id=source.pk, group_id=workspace.group_id)
    print(f"documents        {total}")
    print(f"ingested         {cold[0]:.1f} s  {report.new / cold[0]:.1f} documents/s")

    # The source's extractors of today (None), or changed rules: shorter passages.
    changed: list[Extractor] = [RuleBasedExtractor(max_passage_chars=400)]

    def run(
        label: str, extractors: list[Extractor] | None, *, everything: bool = False
    ) -> dict[str, int]:
        with rls.tenant_context(principal):
            started = reprocess_begin(
                actor=principal, source=source, everything=everything, extractors=extractors
            )
        with timed() as took:
            done = reprocess_now(
                run_id=started.pk, group_id=workspace.group_id, batch=args.batch,
                extractors=extractors,
            )  # fmt: skip
        counts = {k: v for k, v in done.counts.items() if isinstance(v, int)}
        documents = counts.get("documents", 0)
        rate = documents / took[0] if took[0] else 0.0
        print(f"{label:16} {took[0]:.1f} s  {rate:.1f} documents/s  {done.status}  {counts}")
        return counts

    nothing = run("up to date", None)
    same = run("everything", None, everything=True)
    new = run("changed rules", changed)
    again = run("changed, again", changed)
    with rls.tenant_context(principal):
        uncited = (
            Episode.objects.filter(source=source, status=EpisodeStatus.PROCESSED)
            .exclude(evidence__claim__status="published")
            .count()
        )
        claims = Claim.objects.filter(source=source).count()
    print(f"claims           {claims} recorded; documents without a published claim: {uncited}")
    ok = (
        nothing.get("documents", 0) == 0
        and same.get("documents") == total
        and same.get("withdrawn", 0) == 0
        and new.get("documents") == total
        and new.get("withdrawn", 0) > 0
        and again.get("documents", 0) == 0
        and uncited == 0
    )
    print("checks           " + ("ok" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
