"""Errors of the curation domain."""


class ConnectorError(Exception):
    """The source as a whole cannot be read (unreachable, unauthorised, misconfigured)."""


class JudgeUnavailable(Exception):
    """A judge could not give a verdict now (its provider failed, or its circuit is open).

    Not a "no": the caller falls back to what it does without a judge (a merge candidate
    for a reviewer, values that coexist), so the question is not silently settled.
    """
