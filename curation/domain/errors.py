"""Errors of the curation domain."""


class ConnectorError(Exception):
    """The source as a whole cannot be read (unreachable, unauthorised, misconfigured)."""
