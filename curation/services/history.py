"""An item's history: a stored version placed among the item's other versions.

A history export gives one item several versions (rows of one id, each in effect from
its instant until the next; `curation.domain.history`). When a version is recorded,
its claims take their place in the item's timeline:

- what the item's earlier versions said and this one no longer says ends at this
  version's instant (a DEPENDS_ON the new version no longer lists, a manager replaced);
- what this version says and the next version (already stored: a period that arrived
  late) no longer says ends at the next version's instant.

A functional predicate's older value is superseded at the newer value's instant by the
lifecycle's own rules (`claim_publish`, late values included); this rule covers every
predicate, and never ends what a later version still says.
"""

from __future__ import annotations

from collections.abc import Iterable

from curation.domain.history import StoredVersion, neighbours
from curation.models import Claim, Episode, EpisodeStatus, Evidence, Source
from curation.services.lifecycle import claims_end


def _cited(episode_ids: Iterable[int]) -> set[int]:
    ids = list(episode_ids)
    if not ids:
        return set()
    return set(Evidence.objects.filter(episode_id__in=ids).values_list("claim_id", flat=True))


def version_settle(*, source: Source, episode: Episode) -> list[int]:
    """Place the episode (a version: `version_from` set) in its item's timeline, as the
    module docstring says. Returns the ids of the claims whose interval it ended."""
    at = episode.version_from
    if at is None:
        raise ValueError("only a version of an item's history is placed in it")
    stored = Episode.objects.filter(
        source=source, external_id=episode.external_id, status=EpisodeStatus.PROCESSED
    ).exclude(pk=episode.pk)
    around = neighbours(
        at, [StoredVersion(pk, since) for pk, since in stored.values_list("pk", "version_from")]
    )
    said_now = _cited([episode.pk])
    said_later = _cited(version.episode_id for version in around.after)
    gone = _cited(around.before) - said_now - said_later
    ended = claims_end(
        Claim.objects.filter(pk__in=gone),
        at=at,
        reason=f"its item's version of {at:%Y-%m-%d} no longer says it",
    )
    following = around.next
    if following is None or following.version_from is None:
        return ended
    # A version that arrived after a later one: what it says that the later one no
    # longer says held only until then (a claim that began later is the later one's).
    not_after = said_now - _cited([following.episode_id])
    ended += claims_end(
        Claim.objects.filter(pk__in=not_after, valid_from__lt=following.version_from),
        at=following.version_from,
        reason=f"its item's version of {following.version_from:%Y-%m-%d} no longer says it",
    )
    return ended
