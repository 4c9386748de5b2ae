"""The LLM extractor and judges behind the guarded wrapper (breaker, bucket, retries).

What an unavailable provider means differs per port. The extractor raises: the ingest
run stops before its page commits, records why on the source, and the next run takes
the page again (a failed episode would be skipped as "unchanged" from then on, so the
record would never be extracted). A judge raises JudgeUnavailable, "no judgement",
which the services read as having no judge: a merge candidate for a reviewer, or values
that coexist, never a merge or a supersession.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Protocol

from common.guarded import Guarded
from curation.domain.errors import JudgeUnavailable
from curation.domain.records import ExtractedClaim, SourceRecord
from curation.ports import ContradictionJudge, EquivalenceJudge, Extractor
from kernel.resilience import CircuitOpen


class _ModelExtractor(Extractor, Protocol):
    @property
    def model(self) -> str: ...


class _ModelEquivalenceJudge(EquivalenceJudge, Protocol):
    @property
    def model(self) -> str: ...


class _ModelContradictionJudge(ContradictionJudge, Protocol):
    @property
    def model(self) -> str: ...


class ResilientExtractor(Guarded[_ModelExtractor]):
    """Extractor port around a model: one guarded request per record.

    The open circuit (CircuitOpen) and a transient error that outlived its retries
    propagate, so the run stops with the reason and resumes from its cursor later.
    """

    @property
    def version(self) -> str:
        return self.inner.version

    def extract(self, record: SourceRecord, text: str) -> Sequence[ExtractedClaim]:
        return self._guarded(functools.partial(self.inner.extract, record, text))


class _Modelled(Protocol):
    @property
    def model(self) -> str: ...


class _ResilientJudge[J: _Modelled](Guarded[J]):
    def _verdict(self, ask: Callable[[], bool]) -> bool:
        """The judge's verdict; its open circuit or a lasting transient error as
        JudgeUnavailable. Other errors (a bug) propagate: they are not the provider's."""
        unavailable: tuple[type[BaseException], ...] = (CircuitOpen, *self.retry_on)
        try:
            return self._guarded(ask)
        except unavailable as error:
            # The class and status only: an SDK error's message can echo request details.
            status = getattr(error, "status_code", None)
            detail = str(error) if isinstance(error, CircuitOpen) else type(error).__name__
            raise JudgeUnavailable(
                f"judge {self.model}: {detail}{f' (HTTP {status})' if status else ''}"
            ) from None


class ResilientEquivalenceJudge(_ResilientJudge[_ModelEquivalenceJudge]):
    """EquivalenceJudge port around a model; JudgeUnavailable when it cannot answer now."""

    def same_entity(self, a: str, b: str, *, entity_type: str) -> bool:
        ask = functools.partial(self.inner.same_entity, a, b, entity_type=entity_type)
        return self._verdict(ask)


class ResilientContradictionJudge(_ResilientJudge[_ModelContradictionJudge]):
    """ContradictionJudge port around a model; JudgeUnavailable when it cannot answer now."""

    def replaces(self, new_fact: str, old_fact: str) -> bool:
        return self._verdict(functools.partial(self.inner.replaces, new_fact, old_fact))
