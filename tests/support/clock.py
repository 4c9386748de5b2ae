"""Hand-moved time for the code that takes its clock and sleep as arguments.

`FakeClock` is a `kernel.resilience.Clock` (a monotonic `() -> float`), what the
breaker, the embedding cache, the usage ledger and the progress reporter are given;
`RecordingSleep` is a `kernel.resilience.Sleep` that waits for nothing.
"""

from __future__ import annotations


class FakeClock:
    """A monotonic clock that moves only when the test moves it."""

    def __init__(self, start: float = 100.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class RecordingSleep:
    """A sleep that only records how long it was asked to wait."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)
