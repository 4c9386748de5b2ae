"""The LLM extractor and judges behind the guarded wrapper: an outage trips the breaker;
the extractor's failure stops the caller, a judge's becomes "no judgement"."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from curation.adapters.resilient import (
    ResilientContradictionJudge,
    ResilientEquivalenceJudge,
    ResilientExtractor,
)
from curation.domain.errors import JudgeUnavailable
from curation.domain.records import ExtractedClaim, SourceRecord
from kernel.resilience import CircuitBreaker, CircuitOpen


class Outage(Exception):
    """A transient provider error."""


class FailingModel:
    """Every role of a chat model whose provider is down; counts the requests it gets."""

    model = "down-1"
    version = "llm/down-1"
    transient_errors = (Outage,)

    def __init__(self) -> None:
        self.calls = 0

    def _fail(self) -> None:
        self.calls += 1
        raise Outage("503")

    def extract(self, record: SourceRecord, text: str) -> Sequence[ExtractedClaim]:
        self._fail()
        return []

    def same_entity(self, a: str, b: str, *, entity_type: str) -> bool:
        self._fail()
        return False

    def replaces(self, new_fact: str, old_fact: str) -> bool:
        self._fail()
        return False


RECORD = SourceRecord(external_id="doc-1", content=b"billing-api runs on k8s", mime="text/plain")


def _breaker() -> CircuitBreaker:
    return CircuitBreaker(failure_threshold=2, reset_after_s=60.0, name="llm")


def test_extractor_stops_calling_when_its_breaker_opens() -> None:
    model = FailingModel()
    extractor = ResilientExtractor(model, breaker=_breaker(), retries=0, sleep=lambda _: None)
    for _ in range(2):
        with pytest.raises(Outage):
            extractor.extract(RECORD, "text")
    with pytest.raises(CircuitOpen):
        extractor.extract(RECORD, "text")
    assert model.calls == 2


def test_equivalence_judge_unavailable_when_retries_run_out() -> None:
    model = FailingModel()
    judge = ResilientEquivalenceJudge(model, breaker=None, retries=2, sleep=lambda _: None)
    with pytest.raises(JudgeUnavailable, match="judge down-1: Outage"):
        judge.same_entity("PG", "PostgreSQL", entity_type="database")
    assert model.calls == 3


def test_contradiction_judge_unavailable_without_a_call_when_circuit_is_open() -> None:
    model, breaker = FailingModel(), _breaker()
    judge = ResilientContradictionJudge(model, breaker=breaker, retries=0, sleep=lambda _: None)
    for _ in range(2):
        with pytest.raises(JudgeUnavailable):
            judge.replaces("new", "old")
    with pytest.raises(JudgeUnavailable, match="circuit 'llm' is open"):
        judge.replaces("new", "old")
    assert model.calls == 2
