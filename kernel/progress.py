"""Progress of a long run as text: a bar on a terminal, plain lines in a log (stdlib only).

The caller owns the output stream and the clock; this module only decides what to say
and when. A total is often unknown (most connectors cannot count ahead), so the rate
is always shown and an ETA only when a total is known.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Snapshot:
    """Where a run stands: items done (of a total, if known), time spent, extra counters."""

    done: int
    elapsed: float
    total: int | None = None
    counts: Mapping[str, int] = field(default_factory=dict)
    unit: str = "items"


def rate(done: int, elapsed: float) -> float | None:
    """Items per second so far; None before any time has passed."""
    return done / elapsed if elapsed > 0 else None


def eta(done: int, total: int | None, elapsed: float) -> float | None:
    """Seconds left at the rate so far; None without a total or a rate."""
    speed = rate(done, elapsed)
    if total is None or not speed:
        return None
    return max(total - done, 0) / speed


def format_duration(seconds: float) -> str:
    """`42s`, `3m05s`, `2h07m`: short enough for a terminal line."""
    whole = max(round(seconds), 0)
    if whole < 60:
        return f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def format_rate(speed: float | None, unit: str) -> str:
    if speed is None:
        return f"- {unit}/s"
    return f"{speed:.1f} {unit}/s" if speed < 100 else f"{speed:.0f} {unit}/s"


def _tail(snapshot: Snapshot) -> str:
    """Rate, ETA (with a total) and the extra counters, shared by the bar and the line."""
    parts = [format_rate(rate(snapshot.done, snapshot.elapsed), snapshot.unit)]
    left = eta(snapshot.done, snapshot.total, snapshot.elapsed)
    if left:  # neither unknown nor already there
        parts.append(f"ETA {format_duration(left)}")
    parts.append(f"elapsed {format_duration(snapshot.elapsed)}")
    text = ", ".join(parts)
    if snapshot.counts:
        text += "; " + ", ".join(f"{name} {value}" for name, value in snapshot.counts.items())
    return text


def _fraction(snapshot: Snapshot) -> float | None:
    if not snapshot.total:
        return None
    return min(snapshot.done / snapshot.total, 1.0)


def format_line(snapshot: Snapshot) -> str:
    """One plain log line: `120/400 items (30%), 12.0 items/s, ETA 23s, elapsed 10s; new 3`."""
    fraction = _fraction(snapshot)
    if fraction is None:
        head = f"{snapshot.done} {snapshot.unit}"
    else:
        head = f"{snapshot.done}/{snapshot.total} {snapshot.unit} ({fraction:.0%})"
    return f"{head}, {_tail(snapshot)}"


def format_bar(snapshot: Snapshot, *, width: int = 30) -> str:
    """A terminal bar; without a total, a count in place of the bar (nothing to fill)."""
    fraction = _fraction(snapshot)
    if fraction is None:
        return f"[{snapshot.done} {snapshot.unit}] {_tail(snapshot)}"
    filled = int(fraction * width)
    bar = "#" * filled + "." * (width - filled)
    return f"[{bar}] {snapshot.done}/{snapshot.total} {fraction:4.0%} {_tail(snapshot)}"


@dataclass
class Cadence:
    """When a plain line is due: every `seconds`, or every `items` done, whichever first."""

    seconds: float
    items: int | None = None
    _last_time: float | None = field(default=None, init=False)
    _last_done: int = field(default=0, init=False)

    def due(self, *, done: int, now: float) -> bool:
        if self._last_time is None:
            self._last_time = now  # the first line waits one period: short runs stay quiet
            return self.seconds <= 0
        by_time = now - self._last_time >= self.seconds
        by_items = self.items is not None and done - self._last_done >= self.items
        if by_time or by_items:
            self._last_time, self._last_done = now, done
            return True
        return False


# A terminal redraw more often than this is wasted work nobody can read.
BAR_REDRAW_SECONDS = 0.1
ERASE_TO_END = "\x1b[K"


class ProgressReporter:
    """Says how a run goes through `write`: a bar redrawn in place on a terminal, else lines.

    `write` gets complete text (with its `\\r` or newline); the caller decides where it goes.
    """

    def __init__(
        self,
        *,
        write: Callable[[str], None],
        tty: bool,
        unit: str = "items",
        cadence: Cadence | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._write, self._tty, self._unit, self._clock = write, tty, unit, clock
        self._cadence = cadence or Cadence(seconds=BAR_REDRAW_SECONDS if tty else 10.0)
        self._started = clock()
        self._last: Snapshot | None = None
        self._drawn = False

    def snapshot(
        self, done: int, total: int | None = None, counts: Mapping[str, int] | None = None
    ) -> Snapshot:
        elapsed = self._clock() - self._started
        return Snapshot(done, elapsed, total, dict(counts or {}), self._unit)

    def update(
        self, done: int, total: int | None = None, counts: Mapping[str, int] | None = None
    ) -> None:
        """Record progress; draw or print only when the cadence says so."""
        self._last = self.snapshot(done, total, counts)
        due = self._cadence.due(done=done, now=self._clock())
        if due or (self._tty and not self._drawn):  # a terminal gets its bar at once
            self._drawn = True
            self._emit(self._last, final=False)

    def finish(self) -> None:
        """The last state, always shown; the bar's line is ended so later output starts clean."""
        if self._last is None:
            return
        last = self._last
        self._emit(self.snapshot(last.done, last.total, last.counts), final=True)

    def _emit(self, snapshot: Snapshot, *, final: bool) -> None:
        if self._tty:
            # Back to the line's start, redraw, erase what a longer previous bar left.
            self._write("\r" + format_bar(snapshot) + ERASE_TO_END + ("\n" if final else ""))
        else:
            self._write(format_line(snapshot) + "\n")
