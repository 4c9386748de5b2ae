"""Fixtures the HTTP connector tests share: a recorded sleep and a quick `ResilientHttp`."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from curation.adapters.connectors.http import ResilientHttp
from tests.support.clock import RecordingSleep
from tests.support.fake_upstreams import quick_http


@pytest.fixture
def sleep() -> RecordingSleep:
    """The backoff's sleep: what the client waited is in `sleep.calls`, and nothing waits."""
    return RecordingSleep()


@pytest.fixture
def http(sleep: RecordingSleep) -> Iterator[ResilientHttp]:
    """A `ResilientHttp` with short timeouts and four attempts (`quick_http`)."""
    with quick_http(sleep) as client:
        yield client
