"""An ingest run as `Source.progress` holds it, in one line (pure); the bar, the lines and
their formatting are `kernel.progress`, which every long command shares.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from typing import Any

from kernel.progress import Snapshot, format_line

RUN_COUNTERS = ("new", "unchanged", "failed", "pages")
INTERRUPTED = "interrupted"


def as_shown(progress: Mapping[str, Any], *, going: Callable[[], bool]) -> dict[str, Any]:
    """A run's progress as a page or the API shows it: one stored as running that nobody
    runs now (`going` is asked only then: its worker died mid-run) is `interrupted`."""
    if progress.get("state") == "running" and not going():
        return {**progress, "state": INTERRUPTED}
    return dict(progress)


def _moment(value: Any) -> dt.datetime | None:
    try:
        return dt.datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None


def describe_run(progress: Mapping[str, Any]) -> str:
    """An ingest run as `Source.progress` holds it, in one line: state, counts, rate."""
    if not progress:
        return "no run yet"
    started, updated = _moment(progress.get("started_at")), _moment(progress.get("updated_at"))
    elapsed = (updated - started).total_seconds() if started and updated else 0.0
    total = progress.get("total")
    snapshot = Snapshot(
        done=int(progress.get("records") or 0),
        elapsed=elapsed,
        total=total if isinstance(total, int) else None,
        counts={name: int(progress.get(name) or 0) for name in RUN_COUNTERS},
        unit="records",
    )
    when = f" (updated {updated:%Y-%m-%d %H:%M:%S %Z})" if updated else ""
    return f"{progress.get('state', 'unknown')}: {format_line(snapshot)}{when}"
