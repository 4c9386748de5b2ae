#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "vera.settings.local")
    from django.core.management import execute_from_command_line

    from vera.tracing import setup_tracing

    # Before the command runs: runserver builds its middleware chain from the settings
    # the Django instrumentation extends. Its autoreloader's child sets up its own.
    setup_tracing("vera-web" if sys.argv[1:2] == ["runserver"] else "vera-manage")
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
