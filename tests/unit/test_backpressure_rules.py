"""When an outbox lane counts as degraded, and how its thresholds are configured."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from curation.domain.backpressure import LaneLoad, Threshold, pressure
from curation.domain.outbox import Lane
from vera.settings.env import env_int_map

THRESHOLD = Threshold(backlog=100, age_s=60)


def test_a_lane_at_its_thresholds_keeps_up() -> None:
    assert pressure(LaneLoad(Lane.PROJECTION, backlog=100, oldest_age_s=60.0), THRESHOLD) is None


def test_the_reason_names_the_lane_and_each_figure_past_its_threshold() -> None:
    load = LaneLoad(Lane.INTERACTIVE, backlog=101, oldest_age_s=61.4)
    assert pressure(load, THRESHOLD) == (
        "outbox lane interactive: 101 visible pending jobs (threshold 100); "
        "the oldest has waited 61 s (threshold 60 s)"
    )


def test_lane_overrides_are_read_as_name_integer_pairs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERA_X", " interactive=200, projection=50000 ,")
    assert env_int_map("VERA_X") == {"interactive": 200, "projection": 50000}
    monkeypatch.delenv("VERA_X")
    assert env_int_map("VERA_X", default={"interactive": 1}) == {"interactive": 1}


def test_a_malformed_lane_override_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERA_X", "interactive:200")
    with pytest.raises(ImproperlyConfigured, match="'interactive:200' is not key=integer"):
        env_int_map("VERA_X")
