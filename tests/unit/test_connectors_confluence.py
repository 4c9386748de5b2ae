"""ConfluenceConnector through real httpx against a fake Confluence Cloud on 127.0.0.1."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from zoneinfo import ZoneInfo

import pytest

from curation.adapters.connectors.confluence import ConfluenceConnector
from curation.adapters.connectors.http import ResilientHttp
from curation.domain.errors import ConnectorError
from curation.domain.records import RecordFailure, SourceRecord
from tests.support.clock import RecordingSleep
from tests.support.fake_upstreams import (
    CONFLUENCE_SEARCH,
    TOKEN,
    FakeUpstreams,
    Fault,
    confluence_page,
    fetched,
    fetched_ids,
)


@pytest.fixture
def upstream() -> Iterator[FakeUpstreams]:
    with FakeUpstreams() as server:
        server.confluence_pages = [
            confluence_page("101", title="Runbook", when="2024-03-01T10:00:00.000Z"),
            confluence_page("102", title="Escalation", when="2024-03-01T10:05:00.000Z"),
            confluence_page("103", title="On-call", when="2024-03-02T08:00:00.000Z"),
            confluence_page("104", title="Backups", when="2024-03-03T09:30:00.000Z"),
            confluence_page("105", title="DNS", when="2024-03-04T16:45:12.345Z"),
        ]
        yield server


def _connector(
    upstream: FakeUpstreams, http: ResilientHttp, *, token: str = TOKEN, **options: object
) -> ConfluenceConnector:
    return ConfluenceConnector(upstream.base_url, token=token, http=http, page_size=2, **options)  # type: ignore[arg-type]


def test_pages_follow_next_links_when_results_span_several_pages(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    pages = list(_connector(upstream, http).pages(cursor=None))
    assert [len(page.items) for page in pages] == [2, 2, 1]
    assert fetched_ids(pages) == ["101", "102", "103", "104", "105"]
    starts = [request.params["start"] for request in upstream.requests_to(CONFLUENCE_SEARCH)]
    assert starts == ["0", "2", "4"]


def test_every_request_carries_the_bearer_token_when_paging(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    list(_connector(upstream, http).pages(cursor=None))
    headers = [request.headers["authorization"] for request in upstream.requests]
    assert headers == [f"Bearer {TOKEN}"] * 3


def test_first_request_asks_for_bodies_oldest_first_when_searching(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    list(_connector(upstream, http, space="ENG").pages(cursor=None))
    first = upstream.requests[0].params
    assert first["cql"] == 'type=page AND space="ENG" ORDER BY lastmodified ASC'
    assert first["expand"] == "body.storage,version,space"
    assert first["limit"] == "2"


def test_cql_bounds_the_minute_of_the_cursor_when_one_is_stored(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    list(_connector(upstream, http).pages(cursor="2024-03-02T08:00:00+00:00"))
    cql = upstream.requests[0].params["cql"]
    assert cql == 'type=page AND lastmodified >= "2024/03/02 08:00" ORDER BY lastmodified ASC'


def test_cql_date_uses_the_site_zone_when_one_is_configured(http: ResilientHttp) -> None:
    connector = ConfluenceConnector(
        "https://x.example", token=TOKEN, http=http, query_tz=ZoneInfo("America/Los_Angeles")
    )
    since = dt.datetime(2024, 3, 2, 8, 0, 59, tzinfo=dt.UTC)
    assert 'lastmodified >= "2024/03/02 00:00"' in connector.cql(since)


def test_last_page_claims_the_newest_version_when_the_run_completes(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    pages = list(_connector(upstream, http).pages(cursor=None))
    assert pages[-1].cursor == "2024-03-04T16:45:12.345000+00:00"


def test_earlier_pages_hold_back_a_tick_when_more_pages_follow(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    # A tie across the page boundary must survive a crash after the first page.
    upstream.confluence_pages[2] = confluence_page(
        "103", title="On-call", when="2024-03-01T10:05:00.000Z"
    )
    first = next(iter(_connector(upstream, http).pages(cursor=None)))
    assert first.cursor == "2024-03-01T10:04:59.999999+00:00"


def test_second_run_fetches_only_newer_pages_when_given_the_stored_cursor(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    connector = _connector(upstream, http)
    stored = list(connector.pages(cursor=None))[-1].cursor
    upstream.confluence_pages.append(
        confluence_page("106", title="Firewall", when="2024-03-05T07:00:00.000Z")
    )
    upstream.confluence_pages[0] = confluence_page(
        "101", title="Runbook", when="2024-03-05T07:30:00.000Z", version=2
    )
    again = list(connector.pages(cursor=stored))
    assert fetched_ids(again) == ["106", "101"]
    assert again[-1].cursor == "2024-03-05T07:30:00+00:00"


def test_second_run_yields_nothing_when_nothing_changed(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    connector = _connector(upstream, http)
    stored = list(connector.pages(cursor=None))[-1].cursor
    assert list(connector.pages(cursor=stored)) == []


def test_record_carries_text_link_and_metadata_when_a_page_is_fetched(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    upstream.confluence_pages = [
        confluence_page(
            "7",
            title="Tiếng Việt",
            when="2024-03-01T10:00:00.000+07:00",
            body="<h1>Sổ tay</h1><p>Máy chủ &amp; mạng</p>",
            space="OPS",
            version=4,
        )
    ]
    (page,) = list(_connector(upstream, http).pages(cursor=None))
    (record,) = page.items
    assert record == SourceRecord(
        external_id="7",
        content="Sổ tay\n\nMáy chủ & mạng".encode(),
        mime="text/plain",
        url=f"{upstream.base_url}/wiki/spaces/OPS/pages/7",
        title="Tiếng Việt",
        updated_at=dt.datetime(2024, 3, 1, 3, 0, tzinfo=dt.UTC),
        fields={"space": "OPS", "version": 4},
    )


def test_result_without_a_body_fails_alone_when_others_are_fine(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    del upstream.confluence_pages[1]["body"]
    items = fetched(_connector(upstream, http).pages(cursor=None))
    failures = [item for item in items if isinstance(item, RecordFailure)]
    assert [(failure.external_id, failure.reason[:28]) for failure in failures] == [
        ("102", "search result has no body.st")
    ]
    assert len(items) == 5


def test_result_without_an_id_fails_alone_when_others_are_fine(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    del upstream.confluence_pages[0]["id"]
    items = fetched(_connector(upstream, http).pages(cursor=None))
    assert items[0] == RecordFailure(
        "result 0", "search result has no id", url=f"{upstream.base_url}/wiki/spaces/ENG/pages/101"
    )
    assert all(isinstance(item, SourceRecord) for item in items[1:])


def test_rate_limit_is_waited_out_when_confluence_answers_429(
    upstream: FakeUpstreams, http: ResilientHttp, sleep: RecordingSleep
) -> None:
    upstream.fail_next(Fault.rate_limited("2"))
    pages = list(_connector(upstream, http).pages(cursor=None))
    assert len(fetched_ids(pages)) == 5
    assert sleep.calls == [2.0]


def test_server_error_is_retried_when_it_happens_mid_pagination(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    pages = _connector(upstream, http).pages(cursor=None)
    first = next(pages)
    upstream.fail_next(Fault.server_error(502))
    rest = list(pages)
    assert fetched_ids([first, *rest]) == ["101", "102", "103", "104", "105"]


def test_exhausted_retries_raise_when_confluence_stays_down(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    upstream.fail_next(*[Fault.server_error(503)] * 4)
    with pytest.raises(ConnectorError, match="after 4 attempts; last: 503"):
        list(_connector(upstream, http).pages(cursor=None))


def test_unauthorised_raises_without_the_token_when_confluence_answers_401(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    wrong = "wrong-" + TOKEN
    with pytest.raises(ConnectorError, match="unauthorised") as failure:
        list(_connector(upstream, http, token=wrong).pages(cursor=None))
    assert wrong not in str(failure.value)
    assert TOKEN not in repr(failure.value)


def test_malformed_json_raises_when_confluence_answers_with_it(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    upstream.fail_next(Fault.malformed_json())
    with pytest.raises(ConnectorError, match="not JSON"):
        list(_connector(upstream, http).pages(cursor=None))


def test_next_link_off_site_raises_when_it_would_carry_the_token_away(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    upstream.confluence_next_prefix = "http://127.0.0.2:9"
    with pytest.raises(ConnectorError, match="off the configured site"):
        list(_connector(upstream, http).pages(cursor=None))
    assert len(upstream.requests) == 1


def test_corrupt_cursor_raises_when_it_is_not_a_timestamp(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    with pytest.raises(ConnectorError, match="not an ISO 8601"):
        list(_connector(upstream, http).pages(cursor="yesterday"))
