"""The rate limits' pure rules: which budget a request spends, and when a refused one fits."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tenants.domain.limits import (
    Budget,
    Defaults,
    ScopeLimits,
    Window,
    admits,
    budget_for,
    charges,
    estimate,
    retry_after_s,
)

LENGTH = 60
DEFAULTS = Defaults(
    workspace={Budget.SEARCH: 3000, Budget.WRITE: 1200},
    principal={Budget.SEARCH: 600, Budget.WRITE: 300},
)


@pytest.mark.parametrize(
    ("method", "scope", "budget"),
    [
        ("GET", "search", Budget.SEARCH),
        ("POST", None, Budget.WRITE),
        ("delete", None, Budget.WRITE),
        ("POST", "search", Budget.WRITE),
        ("GET", None, None),
        ("HEAD", None, None),
        ("HEAD", "search", Budget.SEARCH),
        ("OPTIONS", "search", None),
    ],
)
def test_budget_follows_the_method_and_the_views_scope(
    method: str, scope: str | None, budget: Budget | None
) -> None:
    assert budget_for(method=method, scope=scope) == budget


def _scope(group_id: str, *, workspace: int | None = None, principal: int | None = None):
    return ScopeLimits(
        group_id=group_id,
        workspace={Budget.SEARCH: workspace, Budget.WRITE: None},
        principal={Budget.SEARCH: principal, Budget.WRITE: None},
    )


def test_charges_are_the_principal_then_each_root_scope_with_its_override_or_the_default() -> None:
    found = charges(
        budget=Budget.SEARCH,
        principal=("api-key:abc", "this API key"),
        scopes=[_scope("w:1", workspace=5), _scope("w:2")],
        defaults=DEFAULTS,
    )
    assert [(c.key, c.limit, c.names) for c in found] == [
        ("search:p:api-key:abc", 600, "this API key"),
        ("search:g:w:1", 5, "this workspace"),
        ("search:g:w:2", 3000, "this workspace"),
    ]


def test_a_principal_rooted_in_several_scopes_gets_the_most_generous_override() -> None:
    scopes = [_scope("w:1", principal=10), _scope("w:2", principal=50), _scope("w:3")]
    found = charges(budget=Budget.SEARCH, principal=("user:1", "this user"), scopes=scopes,
                    defaults=DEFAULTS)  # fmt: skip
    assert found[0].limit == 50


def _fits_after(previous: int, current: int, limit: int, elapsed: float, wait: float) -> bool:
    """Whether one more request fits `wait` seconds later, no other having arrived."""
    later = elapsed + wait
    if later < LENGTH:  # still this window: the previous one weighs less
        return admits(previous=previous, current=current, weight=1 - later / LENGTH, limit=limit)
    into_next = later - LENGTH
    if into_next < LENGTH:  # the next window: this one's count decays, the new one is empty
        return admits(previous=current, current=0, weight=1 - into_next / LENGTH, limit=limit)
    return limit >= 1


refused_states = st.tuples(
    st.integers(0, 500), st.integers(0, 500), st.integers(1, 400), st.floats(0, LENGTH - 1e-6)
).filter(lambda s: not admits(previous=s[0], current=s[1], weight=1 - s[3] / LENGTH, limit=s[2]))


@given(refused_states)
def test_a_refused_request_fits_after_retry_after_and_not_a_second_sooner(
    state: tuple[int, int, int, float],
) -> None:
    previous, current, limit, elapsed = state
    window = Window(number=7, elapsed_s=elapsed, length_s=LENGTH)
    wait = retry_after_s(previous=previous, current=current, limit=limit, window=window)
    assert wait >= 1
    assert _fits_after(previous, current, limit, elapsed, wait)
    if wait > 1:
        assert not _fits_after(previous, current, limit, elapsed, wait - 1)


def test_the_window_slides_instead_of_resetting() -> None:
    window = Window.at(120.0 + 15.0, LENGTH)  # a quarter into window 2
    assert (window.number, window.elapsed_s) == (2, 15.0)
    assert estimate(previous=100, current=10, weight=window.previous_weight) == 85.0
