"""What every app's long-running management commands share: how they report progress."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from kernel.progress import Cadence, ProgressReporter


def reporter_for(command: BaseCommand, *, unit: str, every: float | None) -> ProgressReporter:
    """A bar when the command writes to a terminal, a line every `every` seconds otherwise."""
    out = command.stdout

    def write(text: str) -> None:
        out.write(text, ending="")
        out.flush()

    tty = out.isatty()
    cadence = Cadence(seconds=every) if every is not None and not tty else None
    return ProgressReporter(write=write, tty=tty, unit=unit, cadence=cadence)
