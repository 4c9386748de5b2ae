"""Votes on returned hits: what the feedback signal and calibration learn from."""

from __future__ import annotations

from django.db import transaction

from retrieval.models import Feedback, SearchHit


@transaction.atomic
def feedback_record(*, hit_id: int, helpful: bool, user_id: int | None) -> Feedback:
    """A vote on a returned hit (one per user and hit; voting again changes the vote)."""
    hit = SearchHit.objects.get(pk=hit_id)
    vote, _ = Feedback.objects.update_or_create(
        hit=hit,
        user_id=user_id,  # type: ignore[misc]  # None (no user) is an IS NULL lookup
        defaults={"group_id": hit.group_id, "claim_id": hit.claim_id, "helpful": helpful},
    )
    return vote
