"""VERA_SEARCH__FUSION_WEIGHTS: how stage 1's lists are weighed in RRF (settings only)."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from vera.wiring import fusion_weights


def test_fusion_weights_are_empty_when_unset(settings) -> None:
    settings.VERA_SEARCH__FUSION_WEIGHTS = ""
    assert fusion_weights() == {}


def test_fusion_weights_read_each_list_when_set(settings) -> None:
    settings.VERA_SEARCH__FUSION_WEIGHTS = " fulltext=1.0 , vector=0.25"
    assert fusion_weights() == {"fulltext": 1.0, "vector": 0.25}


@pytest.mark.parametrize(
    "value", ["vector", "vector=much", "vector=-1", "vector=inf", "graph=1.0", "vector=nan"]
)
def test_fusion_weights_refuse_with_the_rule_when_malformed(settings, value: str) -> None:
    settings.VERA_SEARCH__FUSION_WEIGHTS = value
    with pytest.raises(ImproperlyConfigured, match="write list=weight with a list of fulltext"):
        fusion_weights()
