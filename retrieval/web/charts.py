"""The Quality page's charts: server-rendered SVG (pygal), pure functions of selector rows.

No JavaScript: pygal's script references are switched off (`js=[]`) and its inline
config script is dropped, so a chart is plain SVG that works under any CSP and never
reaches a CDN. Times are plotted as POSIX seconds and labelled in the given zone.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Sequence

import pygal
from pygal.style import Style

from retrieval.domain.ranking import SIGNALS
from retrieval.selectors import EvaluationPoint, WeightsStep

METRICS = (("hit@10", "hit_at_10"), ("MRR", "mrr"), ("nDCG@10", "ndcg_at_10"))
FAILED = "failed run"
ACTIVATION = "activation"
STYLE = Style(
    background="white",
    plot_background="white",
    foreground="#1d2330",
    foreground_strong="#1d2330",
    foreground_subtle="#5b6475",
    font_family="system-ui, sans-serif",
    label_font_size=12,
    major_label_font_size=12,
    legend_font_size=13,
    title_font_size=15,
    no_data_font_size=18,
    colors=("#2f5bd3", "#1e8a4c", "#c2660a", "#b3261e", "#7b3fb3", "#0e8a94", "#5b6475"),
)
MAX_TICKS = 8
TICK_STEPS = (
    (dt.timedelta(hours=1), "%m-%d %H:%M"),
    (dt.timedelta(hours=6), "%m-%d %H:%M"),
    (dt.timedelta(days=1), "%Y-%m-%d"),
    (dt.timedelta(days=7), "%Y-%m-%d"),
    (dt.timedelta(days=30), "%Y-%m-%d"),
    (dt.timedelta(days=91), "%Y-%m-%d"),
    (dt.timedelta(days=365), "%Y-%m-%d"),
)
_SCRIPT = re.compile(r"<script\b.*?</script>", re.DOTALL)


def _ticks(start: dt.datetime, end: dt.datetime, tz: dt.tzinfo) -> tuple[list[float], str]:
    """At most MAX_TICKS round times across [start, end] (local hours, days or weeks),
    and the strftime shape that labels them."""
    span = end - start
    step, shape = next(
        ((step, shape) for step, shape in TICK_STEPS if span / step <= MAX_TICKS), TICK_STEPS[-1]
    )
    step *= max(1, math.ceil(span / step / MAX_TICKS))  # decades: several years a tick
    first = start.astimezone(tz).replace(minute=0, second=0, microsecond=0)
    if step >= dt.timedelta(days=1):
        first = first.replace(hour=0)
    ticks, tick = [], first
    while tick <= end:
        if tick >= start:
            ticks.append(tick.timestamp())
        tick += step
    return ticks, shape


def _chart(
    title: str, start: dt.datetime, end: dt.datetime, tz: dt.tzinfo, **config: object
) -> pygal.XY:
    end = max(end, start + dt.timedelta(hours=1))  # a single instant still gets an axis
    ticks, shape = _ticks(start, end, tz)
    return pygal.XY(
        js=[],
        disable_xml_declaration=True,
        title=title,
        style=STYLE,
        width=800,
        height=320,
        legend_at_bottom=True,
        truncate_legend=-1,
        xrange=(start.timestamp(), end.timestamp()),
        x_labels=ticks,
        x_label_rotation=20,
        x_value_formatter=lambda seconds: dt.datetime.fromtimestamp(seconds, tz).strftime(shape),
        value_formatter=lambda value: f"{value:.3f}",
        no_data_text="No data in this range",
        **config,
    )


def _svg(chart: pygal.XY) -> str:
    return _SCRIPT.sub("", str(chart.render(is_unicode=True)))


def scores_chart(
    points: Sequence[EvaluationPoint],
    *,
    start: dt.datetime,
    end: dt.datetime,
    tz: dt.tzinfo = dt.UTC,
) -> str:
    """hit@10, MRR and nDCG@10 per golden-set run over time; failed runs as red dots."""
    chart = _chart("Golden-set scores", start, end, tz, range=(0, 1), dots_size=3)
    for title, name in METRICS:
        chart.add(
            title,
            [
                {"value": (p.at.timestamp(), getattr(p, name)), "label": f"v{p.weight_version}"}
                for p in points
            ],
        )
    failed = [
        {"value": (p.at.timestamp(), p.ndcg_at_10), "label": f"run {p.run_id} below a floor"}
        for p in points
        if p.failed
    ]
    chart.add(FAILED, failed, stroke=False, dots_size=7)
    return _svg(chart)


def _edges(steps: Sequence[WeightsStep], start: dt.datetime, end: dt.datetime) -> list[float]:
    """Where each step begins, clamped into [start, end], then the end."""
    return [max(step.at or start, start).timestamp() for step in steps] + [end.timestamp()]


def weights_chart(
    steps: Sequence[WeightsStep],
    *,
    start: dt.datetime,
    end: dt.datetime,
    tz: dt.tzinfo = dt.UTC,
) -> str:
    """Each signal's weight over time as a step line; every activation a marker on top."""
    top = max((w for step in steps for w in step.weights.values()), default=1.0)
    chart = _chart("Blend weights", start, end, tz, range=(0, top), show_dots=False)
    edges = _edges(steps, start, end)
    for signal in SIGNALS:
        line: list[tuple[float, float]] = []
        for index, step in enumerate(steps):
            weight = step.weights[signal]
            line += [(edges[index], weight), (edges[index + 1], weight)]
        chart.add(signal, line)
    markers = [
        {
            "value": (edges[index], top),
            "label": f"v{step.version} by {step.actor_label}"
            + (f": {step.reason}" if step.reason else ""),
        }
        for index, step in enumerate(steps)
        if step.actor_label and step.at is not None and step.at >= start
    ]
    chart.add(ACTIVATION, markers, stroke=False, show_dots=True, dots_size=7)
    return _svg(chart)
