"""One "valid as of" rule: the pure function, and the two queries that must agree with it.

The curation selectors (the claims API, the portal) and the search SQL each express
`curation.domain.validity.valid_at` in their own query language; the integration tests
hold both to it on the same rows: a published, a superseded and a retracted claim.
"""

from __future__ import annotations

import datetime as dt
import hashlib

import pytest
from django.db import connection
from hypothesis import given
from hypothesis import strategies as st

from curation import selectors
from curation.domain.tiers import ClaimStatus, Verification
from curation.domain.validity import EVER_VALID, valid_at
from curation.models import Claim, Entity, Episode, EpisodeStatus, Evidence, Source
from retrieval.adapters.hashing_embedder import HashingEmbedder
from retrieval.domain.query import Query
from retrieval.models import LexicalTerm
from retrieval.services.index import index_claims
from retrieval.services.search.sql import where_clause
from tenants import rls
from tests.support.lifecycle import history_written_by_hand
from tests.support.tenancy import Tenant

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
DAY = dt.timedelta(days=1)
# (status, valid_from, valid_to): replaced at T0, withdrawn ten days before that, current.
ROWS = {
    "superseded": (ClaimStatus.SUPERSEDED, T0 - 30 * DAY, T0),
    "retracted": (ClaimStatus.RETRACTED, T0 - 20 * DAY, T0 - 10 * DAY),
    "published": (ClaimStatus.PUBLISHED, T0, None),
}
INSTANTS = [
    None,  # now
    T0 - 40 * DAY,  # before any of them
    T0 - 30 * DAY,  # the superseded claim's first instant
    T0 - 15 * DAY,  # the superseded and the retracted claim
    T0 - 10 * DAY,  # the retraction's instant: no longer valid
    T0 - dt.timedelta(seconds=1),
    T0,  # the replacement's first instant
    T0 + 10 * DAY,
]


def _expected(instant: dt.datetime | None) -> set[str]:
    return {
        name
        for name, (status, valid_from, valid_to) in ROWS.items()
        if valid_at(status=status, valid_from=valid_from, valid_to=valid_to, instant=instant)
    }


# --- the rule (no database) -------------------------------------------------------------


@pytest.mark.parametrize(
    ("instant", "names"),
    [
        (None, {"published"}),
        (T0 - 40 * DAY, set()),
        (T0 - 15 * DAY, {"superseded", "retracted"}),
        (T0 - 10 * DAY, {"superseded"}),
        (T0, {"published"}),
    ],
)
def test_valid_at_reads_the_half_open_interval_when_an_instant_is_given(
    instant: dt.datetime | None, names: set[str]
) -> None:
    assert _expected(instant) == names


def test_a_retracted_claim_is_hidden_now_and_valid_before_its_retraction() -> None:
    status, valid_from, valid_to = ROWS["retracted"]
    kwargs = {"status": status, "valid_from": valid_from, "valid_to": valid_to}
    assert not valid_at(**kwargs, instant=None)
    assert valid_at(**kwargs, instant=valid_from)
    assert not valid_at(**kwargs, instant=valid_to)


@given(
    status=st.sampled_from(sorted(set(ClaimStatus) - EVER_VALID)),
    instant=st.none() | st.datetimes(timezones=st.just(dt.UTC)),
)
def test_a_claim_never_published_is_valid_at_no_instant_when_its_interval_holds_it(
    status: ClaimStatus, instant: dt.datetime | None
) -> None:
    assert not valid_at(status=status, valid_from=dt.datetime.min.replace(tzinfo=dt.UTC),
                        valid_to=None, instant=instant)  # fmt: skip


# --- the queries, on the same rows ------------------------------------------------------


@pytest.fixture
def rows(tenant_a: Tenant) -> dict[str, int]:
    """The three claims, indexed for search; their ids by name."""
    group_id = tenant_a.workspace.group_id
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)), history_written_by_hand():
        source = Source.objects.create(
            group_id=group_id, origin_group_id=group_id, name="validity", kind="markdown",
            config={"root": "/nonexistent"}, trust_tier=1,
        )  # fmt: skip
        episode = Episode.objects.create(
            group_id=group_id, source=source, external_id="validity.md",
            content_hash=hashlib.sha256(b"validity").hexdigest(), fetched_at=T0,
            status=EpisodeStatus.PROCESSED,
        )  # fmt: skip
        subject = Entity.objects.create(group_id=group_id, canonical_name="billing-api")
        ids = {}
        for name, (status, valid_from, valid_to) in ROWS.items():
            claim = Claim.objects.create(
                group_id=group_id, source=source, subject=subject, predicate="RUNS_ON",
                object_literal=f"{name}-host", object_key=f"l:{name}-host",
                fact_text=f"billing-api runs on {name}-host", confidence=1.0,
                verification=Verification.AUTO, tier=1, authority=1.0, status=status,
                valid_from=valid_from, valid_to=valid_to,
            )  # fmt: skip
            Evidence.objects.create(group_id=group_id, claim=claim, episode=episode, snippet="")
            ids[name] = claim.pk
        index_claims(claim_ids=list(ids.values()), embedder=HashingEmbedder(dimension=256))
    return ids


def _names(ids: dict[str, int], found: set[int]) -> set[str]:
    return {name for name, claim_id in ids.items() if claim_id in found}


@pytest.mark.django_db
@pytest.mark.parametrize("instant", INSTANTS)
def test_claims_valid_agrees_with_the_rule_when_read_as_of_an_instant(
    tenant_a: Tenant, rows: dict[str, int], instant: dt.datetime | None
) -> None:
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        found = set(selectors.claims_valid(as_of=instant).values_list("pk", flat=True))
    assert _names(rows, found) == _expected(instant)


@pytest.mark.django_db
@pytest.mark.parametrize("instant", INSTANTS)
def test_the_search_filter_agrees_with_the_rule_when_read_as_of_an_instant(
    tenant_a: Tenant, rows: dict[str, int], instant: dt.datetime | None
) -> None:
    where, params = where_clause(Query(text="billing-api", as_of=instant))
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)), connection.cursor() as cursor:
        cursor.execute(f"SELECT d.claim_id FROM retrieval_searchdocument d WHERE {where}", params)  # noqa: S608
        found = {row[0] for row in cursor.fetchall()}
    assert _names(rows, found) == _expected(instant)


@pytest.mark.django_db
def test_the_lexical_fast_path_holds_exactly_the_claims_valid_now(
    tenant_a: Tenant, rows: dict[str, int]
) -> None:
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        found = set(LexicalTerm.objects.filter(published=True).values_list("claim_id", flat=True))
    assert _names(rows, found) == _expected(None)
