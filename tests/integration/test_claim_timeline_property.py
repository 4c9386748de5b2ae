"""A functional predicate never holds two values at once, whatever happens to it.

Hypothesis draws sequences of what the services do to one subject's RUNS_ON (publish a
value valid from some day, early or late; retract a claim; reinstate a retracted one;
erase the episode that said one) and runs them through the real services in a
transaction rolled back after each example. After every step, the record as VERA now
believes it (published and superseded claims) has at most one current value and no two
intervals that overlap.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import itertools
from dataclasses import dataclass

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curation.domain.tiers import ClaimStatus, Tier, decide
from curation.models import Claim, Entity, Episode, EpisodeStatus, Source
from curation.services.claims import NewClaim, claim_record
from curation.services.retraction import RetractionRefused, claim_reinstate, claim_retract
from retrieval import bootstrap as retrieval_bootstrap
from retrieval.services.erasure import erase
from tenants import rls
from tests.support.tenancy import Tenant

pytestmark = pytest.mark.django_db

T0 = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
HOSTS = ["k8s-a", "k8s-b", "k8s-c"]


@dataclass(frozen=True)
class Publish:
    host: int
    day: int


@dataclass(frozen=True)
class Retract:
    nth: int


@dataclass(frozen=True)
class Reinstate:
    nth: int


@dataclass(frozen=True)
class Erase:
    nth: int


STEPS = st.lists(
    st.one_of(
        st.builds(Publish, st.integers(0, len(HOSTS) - 1), st.integers(0, 60)),
        st.builds(Retract, st.integers(0, 9)),
        st.builds(Reinstate, st.integers(0, 9)),
        st.builds(Erase, st.integers(0, 9)),
    ),
    min_size=1,
    max_size=8,
)


class Timeline:
    """One workspace's billing-api RUNS_ON, changed only through the services."""

    def __init__(self, tenant: Tenant) -> None:
        self.tenant = tenant
        self.actor = tenant.principal(tenant.admin)
        group_id = tenant.workspace.group_id
        self.source = Source.objects.create(
            group_id=group_id, origin_group_id=group_id, name="cmdb", kind="markdown",
            config={"root": "/nonexistent"}, trust_tier=Tier.AUTHORITATIVE,
        )  # fmt: skip
        self.episodes: list[Episode] = []

    def _entity(self, name: str) -> Entity:
        """The entity of this name, as ingestion resolves it: an erasure deletes one no
        claim names any more, and the next document about it makes it anew."""
        entity, _ = Entity.objects.get_or_create(
            group_id=self.source.group_id, canonical_name=name, merged_into=None
        )
        return entity

    @property
    def subject(self) -> Entity:
        return self._entity("billing-api")

    def publish(self, step: Publish) -> None:
        n = len(self.episodes)
        at = T0 + dt.timedelta(days=step.day)
        episode = Episode.objects.create(
            group_id=self.source.group_id, source=self.source, external_id=f"cmdb-{n}.csv",
            content_hash=hashlib.sha256(str(n).encode()).hexdigest(), fetched_at=at,
            status=EpisodeStatus.PROCESSED,
        )  # fmt: skip
        self.episodes.append(episode)
        host = self._entity(HOSTS[step.host])
        claim_record(
            source=self.source, episode=episode,
            new=NewClaim(subject=self.subject, predicate="RUNS_ON", object_entity=host,
                         fact_text=f"billing-api runs on {host.canonical_name}", confidence=1.0),
            decision=decide(Tier.AUTHORITATIVE, target_is_shared=True, writer_is_personal=False),
            valid_from=at,
        )  # fmt: skip

    def _nth(self, statuses: set[ClaimStatus], nth: int) -> Claim | None:
        claims = list(Claim.objects.filter(status__in=statuses).order_by("pk"))
        return claims[nth % len(claims)] if claims else None

    def retract(self, step: Retract) -> None:
        claim = self._nth({ClaimStatus.PUBLISHED, ClaimStatus.SUPERSEDED}, step.nth)
        if claim is not None:
            claim_retract(actor=self.actor, claim_id=claim.pk, reason="wrong")

    def reinstate(self, step: Reinstate) -> None:
        claim = self._nth({ClaimStatus.RETRACTED}, step.nth)
        if claim is not None:
            # A claim whose evidence was erased since has nothing to publish again.
            with contextlib.suppress(RetractionRefused):
                claim_reinstate(actor=self.actor, claim_id=claim.pk, reason="right after all")

    def erase(self, step: Erase) -> None:
        alive = [e for e in self.episodes if Episode.objects.filter(pk=e.pk).exists()]
        if not alive:
            return
        episode = alive[step.nth % len(alive)]
        erase(
            actor=self.actor, kind="episode", target_id=episode.pk, reason="erase it",
            confirm=True, catalog=retrieval_bootstrap.providers().embedders(),
        )  # fmt: skip

    def assert_one_value_at_a_time(self, history: list[object]) -> None:
        believed = list(
            Claim.objects.filter(
                subject=self.subject, predicate="RUNS_ON",
                status__in=[ClaimStatus.PUBLISHED, ClaimStatus.SUPERSEDED],
            ).order_by("valid_from", "pk")
        )  # fmt: skip
        current = [c.pk for c in believed if c.status == ClaimStatus.PUBLISHED]
        assert len(current) <= 1, (history, current)
        shown = [(c.pk, c.status, c.valid_from, c.valid_to) for c in believed]
        for earlier, later in itertools.pairwise(believed):
            assert earlier.valid_to is not None, (history, shown)
            assert earlier.valid_to <= later.valid_from, (history, shown)


@settings(
    max_examples=40, deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)  # fmt: skip
@given(steps=STEPS)
def test_a_functional_predicate_never_holds_two_values_at_once(
    tenant_a: Tenant, steps: list[object]
) -> None:
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        try:
            with transaction.atomic():
                timeline = Timeline(tenant_a)
                done: list[object] = []
                for step in steps:
                    getattr(timeline, type(step).__name__.lower())(step)
                    done.append(step)
                    timeline.assert_one_value_at_a_time(done)
                raise _RolledBack
        except _RolledBack:
            pass


class _RolledBack(Exception):
    """Undoes one example's writes (each example starts from the same workspace)."""
