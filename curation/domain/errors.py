"""Errors of the curation domain."""


class ConnectorError(Exception):
    """The source as a whole cannot be read (unreachable, unauthorised, misconfigured)."""


class JudgeUnavailable(Exception):
    """A judge could not give a verdict now (its provider failed, or its circuit is open).

    Not a "no": the caller falls back to what it does without a judge (a merge candidate
    for a reviewer, values that coexist), so the question is not silently settled.
    """


class ObjectStoreError(Exception):
    """The object store refused a request: the bytes were not stored, read or removed.

    `reason` is a short label safe to show anyone (an S3 error code or an exception
    class, never a key, a URL or a credential); the message says which store and call.
    """

    def __init__(self, message: str, *, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class ObjectStoreUnavailable(ObjectStoreError):
    """The object store cannot serve anyone now (unreachable, timed out, overloaded,
    its bucket or credentials wrong, or its circuit open): try again later.

    Not a KeyError: nothing is known about the key. An ingest run stops before its page
    commits and resumes from its cursor; an erasure's cleanup is retried.
    """
