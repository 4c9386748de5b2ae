"""The Quality page's charts are plain SVG built from selector rows (no database, no JS)."""

from __future__ import annotations

import datetime as dt
import re
import xml.etree.ElementTree as ET

from retrieval.domain.ranking import DEFAULT_WEIGHTS
from retrieval.selectors import EvaluationPoint, WeightsStep
from retrieval.web.charts import scores_chart, weights_chart

START = dt.datetime(2025, 5, 1, tzinfo=dt.UTC)
END = START + dt.timedelta(days=30)
SVG = "{http://www.w3.org/2000/svg}"


def _point(day: int, ndcg: float, *, failed: bool = False) -> EvaluationPoint:
    at = START + dt.timedelta(days=day)
    return EvaluationPoint(day, at, failed, 0, min(1.0, ndcg + 0.2), ndcg, ndcg)


def _series(svg: str, index: int) -> list[ET.Element]:
    """The groups of the index-th series (pygal draws lines and dots in separate layers)."""
    root = ET.fromstring(svg)  # noqa: S314  # our own output, not untrusted input
    groups = [g for g in root.iter(f"{SVG}g") if f"serie-{index}" in g.get("class", "").split()]
    assert groups, f"no series {index}"
    return groups


def _dots(svg: str, index: int) -> int:
    return sum(len(list(g.iter(f"{SVG}circle"))) for g in _series(svg, index))


def _labels(svg: str, index: int) -> str:
    return " ".join(d.text or "" for g in _series(svg, index) for d in g.iter(f"{SVG}desc"))


def _line(svg: str, index: int) -> list[tuple[float, float]]:
    path = next(p for g in _series(svg, index) for p in g.iter(f"{SVG}path"))
    numbers = [float(n) for n in re.findall(r"[\d.]+", path.get("d", ""))]
    return list(zip(numbers[::2], numbers[1::2], strict=True))


def test_scores_chart_is_scriptless_svg_when_rendered() -> None:
    svg = scores_chart([_point(1, 0.5), _point(2, 0.6)], start=START, end=END)
    assert svg.startswith("<svg")
    assert "<script" not in svg
    assert not re.search(r'(href|src)="https?://', svg)


def test_failed_runs_are_their_own_series_when_below_a_floor() -> None:
    svg = scores_chart(
        [_point(1, 0.5), _point(2, 0.2, failed=True), _point(3, 0.6)], start=START, end=END
    )
    assert _dots(svg, 3) == 1
    assert "run 2 below a floor" in _labels(svg, 3)


def test_weights_are_step_lines_with_a_marker_per_activation_in_range() -> None:
    relevant = {**DEFAULT_WEIGHTS.as_dict(), "relevance": 0.7}
    steps = [
        WeightsStep(at=None, version=0, weights=DEFAULT_WEIGHTS.as_dict()),
        WeightsStep(START + dt.timedelta(days=10), 1, relevant, "user:ada", "better recall"),
    ]
    svg = weights_chart(steps, start=START, end=END)
    # Four corners: the default until day 10, then 0.7 until the end.
    (x0, y0), (x1, y1), (x2, y2), (x3, y3) = _line(svg, 0)
    assert (y0, x1, y2) == (y1, x2, y3)
    assert x0 < x1 < x3
    assert y2 < y1  # SVG's y grows downwards: 0.7 is drawn above 0.4
    assert _dots(svg, 6) == 1
    assert "v1 by user:ada: better recall" in _labels(svg, 6)


def test_time_axis_has_at_most_eight_labels_when_the_range_is_long() -> None:
    svg = scores_chart([_point(1, 0.5)], start=START - dt.timedelta(days=3000), end=END)
    labels = re.findall(r'<g class="guides"><path[^>]*/><text[^>]*>(\d{4}-\d\d-\d\d)<', svg)
    assert 0 < len(labels) <= 8
