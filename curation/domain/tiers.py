"""Trust tiers, verification, the publish decision and the contamination guard (pure)."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Tier(enum.IntEnum):
    """How far a source is trusted; decides publication and authority."""

    AUTHORITATIVE = 1
    CURATED = 2
    INFORMATIONAL = 3
    UNVERIFIED = 4


AUTHORITY: dict[Tier, float] = {
    Tier.AUTHORITATIVE: 1.00,
    Tier.CURATED: 0.85,
    Tier.INFORMATIONAL: 0.70,
    Tier.UNVERIFIED: 0.40,
}


class Verification(enum.StrEnum):
    """How a fact was confirmed."""

    HUMAN_VERIFIED = "human_verified"
    AUTO = "auto"
    PENDING = "pending"


VERIFICATION_SCORE: dict[Verification, float] = {
    Verification.HUMAN_VERIFIED: 1.0,
    Verification.AUTO: 0.8,
    Verification.PENDING: 0.5,
}


class ClaimStatus(enum.StrEnum):
    """Lifecycle: proposed | pending_review -> published | rejected -> superseded | retracted."""

    PROPOSED = "proposed"
    PENDING_REVIEW = "pending_review"
    PUBLISHED = "published"
    REJECTED = "rejected"
    SUPERSEDED = "superseded"
    RETRACTED = "retracted"


@dataclass(frozen=True)
class Decision:
    """What happens to a freshly extracted claim."""

    status: ClaimStatus
    verification: Verification
    authority: float
    reason: str


def decide(tier: Tier, *, target_is_shared: bool, writer_is_personal: bool) -> Decision:
    """The publish decision for a claim from a source of `tier` written into a scope.

    Tiers 1-2 publish at once (auto-verified), tier 3 waits for a reviewer, tier 4 is a
    proposal. The contamination guard: a shared scope accepts only verified knowledge,
    so a personal-scope writer or an unverified source can only *propose* there.
    """
    authority = AUTHORITY[tier]
    if target_is_shared and (writer_is_personal or tier is Tier.UNVERIFIED):
        why = "personal scope writing into a shared scope" if writer_is_personal else "tier 4"
        return Decision(ClaimStatus.PROPOSED, Verification.PENDING, authority, why)
    if tier in (Tier.AUTHORITATIVE, Tier.CURATED):
        return Decision(ClaimStatus.PUBLISHED, Verification.AUTO, authority, f"tier {tier.value}")
    if tier is Tier.INFORMATIONAL:
        return Decision(ClaimStatus.PENDING_REVIEW, Verification.PENDING, authority, "tier 3")
    return Decision(ClaimStatus.PROPOSED, Verification.PENDING, authority, "tier 4")
