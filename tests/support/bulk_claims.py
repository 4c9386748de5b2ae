"""Many pending claims at once (bulk inserts), for query-count tests and the portal bench."""

from __future__ import annotations

import hashlib

from django.utils import timezone

from curation.domain.tiers import ClaimStatus, Verification
from curation.models import Claim, Entity, Episode, EpisodeStatus, Evidence, Source
from tenants import rls
from tenants.domain.access import Principal
from tests.support.lifecycle import history_written_by_hand


def make_pending(
    *, principal: Principal, group_id: str, count: int, status: str = ClaimStatus.PENDING_REVIEW
) -> list[int]:
    """`count` tier-3 claims waiting in `status`, each with its own subject and evidence."""
    now = timezone.now()
    with rls.tenant_context(principal):
        source = Source.objects.create(
            group_id=group_id, origin_group_id=group_id, name=f"bulk-{status}-{count}",
            kind="markdown", config={"root": "/nonexistent"}, trust_tier=3,
        )  # fmt: skip
        episode = Episode.objects.create(
            group_id=group_id, source=source, external_id=f"bulk-{status}.md",
            content_hash=hashlib.sha256(f"{status}{count}".encode()).hexdigest(),
            fetched_at=now, status=EpisodeStatus.PROCESSED,
        )  # fmt: skip
        subjects = Entity.objects.bulk_create(
            Entity(group_id=group_id, canonical_name=f"svc-{i}") for i in range(count)
        )
        host = Entity.objects.create(group_id=group_id, canonical_name="k8s-prod-1")
        # A published status is set up by hand, past the lifecycle's guard.
        with history_written_by_hand():
            claims = Claim.objects.bulk_create(
                Claim(
                    group_id=group_id, source=source, subject=subject, predicate="RUNS_ON",
                    object_entity=host, object_key=f"e:{host.pk}",
                    fact_text=f"svc-{i} runs on k8s-prod-1.", confidence=0.7,
                    verification=Verification.PENDING, tier=3, authority=0.7, status=status,
                    valid_from=now,
                )
                for i, subject in enumerate(subjects)
            )  # fmt: skip
        Evidence.objects.bulk_create(
            Evidence(group_id=group_id, claim=claim, episode=episode, snippet=claim.fact_text)
            for claim in claims
        )
    return [claim.pk for claim in claims]
