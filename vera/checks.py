"""System checks the project adds to Django's (`manage.py check`, and every start)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core import checks


def renamed_variables(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """One warning per old variable name the environment still sets (see settings.env)."""
    return [
        checks.Warning(
            note,
            hint="docs/configuration.md lists every variable under its current name.",
            id="vera.W001",
        )
        for note in getattr(settings, "VERA_RENAMED_VARIABLES", [])
    ]
