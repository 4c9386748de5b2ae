"""The rules of a proposed fact (pure): trimmed, bounded, a known predicate, and patterns
that the schema's ECMA reading and the server's Python reading agree on."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from schemathesis.core.jsonschema.patterns import compile_ecma_pattern

from curation.domain import proposals
from curation.domain.names import normalize_name
from curation.domain.ontology import DEFAULT_ONTOLOGY
from curation.domain.proposals import (
    NAME_PATTERN,
    OPTIONAL_URL_PATTERN,
    URL_PATTERN,
    ProposalRefused,
    proposal_parse,
)

GOOD = {
    "subject": " billing-api ",
    "predicate": "RUNS_ON",
    "object": "k8s-prod-1",
    "evidence": "  The manifest says so.\n",
    "source_url": "https://example.org/a?b=c#d",
}


def _parse(**changes: str) -> proposals.Proposal:
    return proposal_parse(**{**GOOD, **changes}, ontology=DEFAULT_ONTOLOGY)  # type: ignore[arg-type]


def _refusals(**changes: str) -> dict[str, str]:
    with pytest.raises(ProposalRefused) as refused:
        _parse(**changes)
    return refused.value.errors


def test_a_good_proposal_is_trimmed() -> None:
    proposal = _parse()
    assert (proposal.subject, proposal.evidence) == ("billing-api", "The manifest says so.")
    assert proposal.fact_text(DEFAULT_ONTOLOGY) == "billing-api runs on k8s-prod-1."


def test_an_unknown_predicate_is_refused_naming_the_known_ones() -> None:
    message = _refusals(predicate="FLIES_TO")["predicate"]
    assert "'FLIES_TO'" in message
    assert all(name in message for name in DEFAULT_ONTOLOGY.senses)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("subject", ""),
        ("subject", " \t"),
        ("object", "--"),
        ("object", "x" * 301),
        ("evidence", " "),
        ("evidence", "x" * 4001),
        ("evidence", "a\x00b"),
        ("evidence", "a\ud800b"),
        ("source_url", "ftp://example.org/a"),
        ("source_url", "https://exa mple.org"),
        ("source_url", "https://"),
    ],
)
def test_a_bad_field_is_refused_by_name_when_it_breaks_a_rule(field: str, value: str) -> None:
    assert list(_refusals(**{field: value})) == [field]


def test_every_bad_field_is_named_at_once() -> None:
    assert set(_refusals(subject="", evidence="")) == {"subject", "evidence"}


def test_the_key_ignores_case_and_spacing_of_names_but_not_the_proposer() -> None:
    one, other = _parse(), _parse(subject="Billing-API", object=" K8S-prod-1")
    assert one.key("api-key:a") == other.key("api-key:a")
    assert one.key("api-key:a") != one.key("api-key:b")


def test_a_has_predicates_object_is_a_value() -> None:
    assert _parse(predicate="HAS_VERSION", object="1.2").object_is_literal
    assert not _parse().object_is_literal


def test_every_letter_a_name_pattern_admits_survives_normalisation() -> None:
    letter = re.compile(NAME_PATTERN)
    kept = [chr(cp) for cp in range(0x10000) if letter.fullmatch(chr(cp))]
    assert len(kept) > 40_000  # the scripts it spells out, not an accidental few
    assert [c for c in kept if not normalize_name(f"-{c}-")] == []


@pytest.mark.parametrize("pattern", [NAME_PATTERN, URL_PATTERN, OPTIONAL_URL_PATTERN])
@given(text=st.text(max_size=12) | st.from_regex(r"https?://[a-z\u00e9 \x85]{1,5}/?.{0,4}"))
def test_python_and_the_schemas_reading_of_a_pattern_agree(pattern: str, text: str) -> None:
    ecma = compile_ecma_pattern(pattern)
    assert ecma is not None
    assert bool(re.fullmatch(pattern, text)) == bool(ecma.search(text))
