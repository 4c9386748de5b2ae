"""ASGI entry point of the MCP server: `uvicorn vera.mcp.asgi:app --port 8001`.

Django is set up first (the same settings as web), so the tools run the same code.
"""

from __future__ import annotations

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "vera.settings.production")
django.setup()

from vera.mcp.server import build_app  # noqa: E402 - needs the apps loaded

app = build_app()
