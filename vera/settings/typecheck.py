"""mypy's Django plugin: the shared settings, needing no server and no environment.

The plugin imports the settings and sets Django up to learn the models; it never
connects. test.py would refuse to load without the test-profile servers, so the type
check (bin/vera lint runs it with none started) reads base.py through this module.
"""

from __future__ import annotations

from .base import *  # noqa: F403

SECRET_KEY = "django-insecure-typecheck-only"  # noqa: S105
