"""Every connector kind declares how its records are extracted, and the composition root
builds exactly that: a kind without a declaration (or with only a model's) is refused
at start, never silently given the rule-based extractor."""

from __future__ import annotations

import functools
from dataclasses import replace

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from curation.domain import connector_config
from curation.domain.connector_config import KINDS, Extraction, declaration_refusals
from curation.domain.extraction import RuleBasedExtractor, StructuredExtractor
from curation.domain.extraction.conversation import ConversationExtractor
from curation.domain.sources import AGENT_KIND, ConnectorKind
from curation.models import Source
from vera import wiring

CONFIG = {
    ConnectorKind.MARKDOWN: {"root": "/srv"},
    ConnectorKind.CMDB: {"path": "/srv/cmdb.csv", "mapping": {"Host": "RUNS_ON"}},
    ConnectorKind.CONFLUENCE: {"base_url": "https://x.example"},
    ConnectorKind.JIRA: {"base_url": "https://x.example"},
    ConnectorKind.SLACK: {"channel": "C1"},
    ConnectorKind.CONVERSATION: {"root": "/srv", "timezone": "Europe/Paris"},
}
TYPES = {
    Extraction.STRUCTURED: StructuredExtractor,
    Extraction.CONVERSATION: ConversationExtractor,
    Extraction.RULES: RuleBasedExtractor,
}


def test_the_declarations_as_shipped_are_whole() -> None:
    assert declaration_refusals(KINDS) == []
    assert set(CONFIG) == set(ConnectorKind)  # a new kind is added to this test too
    wiring.connector_kinds_check()


@pytest.mark.parametrize("kind", list(ConnectorKind), ids=str)
def test_each_kind_gets_the_extractors_it_declares_in_order(kind: ConnectorKind) -> None:
    source = Source(kind=kind.value, config=CONFIG[kind], trust_tier=3)
    declared = [how for how in KINDS[kind].extraction if how is not Extraction.LLM]
    assert [type(e) for e in wiring.extractors_for(source)] == [TYPES[how] for how in declared]


def test_the_source_configures_its_extractors() -> None:
    cmdb = Source(kind="cmdb", config=CONFIG[ConnectorKind.CMDB], trust_tier=1)
    (structured,) = wiring.extractors_for(cmdb)
    assert isinstance(structured, StructuredExtractor)
    assert structured.mapping["host"] == "RUNS_ON"
    chat = Source(kind="conversation", config=CONFIG[ConnectorKind.CONVERSATION], trust_tier=4)
    (turns,) = wiring.extractors_for(chat)
    assert isinstance(turns, ConversationExtractor)
    assert str(turns.zone) == "Europe/Paris"


@override_settings(VERA_EXTRACTOR__LLM_MODEL="local-model")
def test_a_configured_model_joins_the_kinds_that_declare_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = object()
    monkeypatch.setattr(wiring, "llm_extractor", functools.cache(lambda: model))
    jira = Source(kind="jira", config=CONFIG[ConnectorKind.JIRA], trust_tier=2)
    assert wiring.extractors_for(jira)[-1] is model
    cmdb = Source(kind="cmdb", config=CONFIG[ConnectorKind.CMDB], trust_tier=1)
    assert model not in wiring.extractors_for(cmdb)  # a CMDB declares no model


def test_a_kind_without_a_declaration_is_refused_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    without = {kind: rules for kind, rules in KINDS.items() if kind is not ConnectorKind.SLACK}
    monkeypatch.setattr(connector_config, "KINDS", without)
    with pytest.raises(ImproperlyConfigured, match="'slack' declares no rules and no extraction"):
        wiring.connector_kinds_check()


@pytest.mark.parametrize("extraction", [(), (Extraction.LLM,)], ids=["none", "only-a-model"])
def test_a_kind_that_needs_a_model_for_every_record_is_refused_at_start(
    monkeypatch: pytest.MonkeyPatch, extraction: tuple[Extraction, ...]
) -> None:
    kinds = dict(KINDS)
    kinds[ConnectorKind.JIRA] = replace(KINDS[ConnectorKind.JIRA], extraction=extraction)
    monkeypatch.setattr(connector_config, "KINDS", kinds)
    with pytest.raises(ImproperlyConfigured, match="'jira' declares no extractor that runs"):
        wiring.connector_kinds_check()


def test_the_agents_source_has_no_extractors() -> None:
    """What agents propose arrives by the API, read from no document: a reprocessing of
    it is refused by the service for that reason, not by a missing declaration."""
    agents = Source(kind=AGENT_KIND, config={}, trust_tier=4)
    assert wiring.extractors_for(agents) == []
    with pytest.raises(ValueError, match="unknown connector kind 'wiki'"):
        wiring.extractors_for(Source(kind="wiki", config={}, trust_tier=3))
