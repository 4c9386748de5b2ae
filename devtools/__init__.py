"""Developer tooling: the embedded servers behind `make run` and `make test`, and their CLI.

Not part of the Django project and not shipped in the image (.dockerignore): nothing in
`vera` or an app imports it (an import-linter contract). It runs before Django is
configured, so it imports nothing from Django either.
"""
