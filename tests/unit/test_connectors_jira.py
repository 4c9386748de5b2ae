"""JiraConnector through real httpx against a fake Jira REST v2 on 127.0.0.1."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from zoneinfo import ZoneInfo

import pytest

from curation.adapters.connectors.http import ResilientHttp
from curation.adapters.connectors.jira import JiraConnector
from curation.domain.errors import ConnectorError
from curation.domain.records import RecordFailure, SourceRecord
from tests.support.clock import RecordingSleep
from tests.support.fake_upstreams import (
    JIRA_SEARCH,
    TOKEN,
    FakeUpstreams,
    Fault,
    fetched,
    fetched_ids,
    jira_issue,
    quick_http,
)


@pytest.fixture
def upstream() -> Iterator[FakeUpstreams]:
    with FakeUpstreams() as server:
        server.jira_issues = [
            jira_issue("OPS-1", summary="Disk full on db1", updated="2024-03-01T10:00:00.000+0000"),
            jira_issue("OPS-2", summary="Rotate certs", updated="2024-03-01T11:00:00.000+0000"),
            jira_issue("OPS-3", summary="Patch kernel", updated="2024-03-02T09:00:00.000+0000"),
            jira_issue("OPS-4", summary="Renew domain", updated="2024-03-03T12:00:00.000+0000"),
            jira_issue("OPS-5", summary="Upgrade DNS", updated="2024-03-04T15:30:45.120+0000"),
        ]
        yield server


def _connector(
    upstream: FakeUpstreams, http: ResilientHttp, *, jql: str = "", page_size: int = 2
) -> JiraConnector:
    return JiraConnector(upstream.base_url, token=TOKEN, jql=jql, page_size=page_size, http=http)


def test_pages_advance_start_at_when_results_span_several_pages(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    pages = list(_connector(upstream, http).pages(cursor=None))
    assert fetched_ids(pages) == ["OPS-1", "OPS-2", "OPS-3", "OPS-4", "OPS-5"]
    params = [request.params for request in upstream.requests_to(JIRA_SEARCH)]
    assert [(p["startAt"], p["maxResults"]) for p in params] == [("0", "2"), ("2", "2"), ("4", "2")]
    assert all(
        request.headers["authorization"] == f"Bearer {TOKEN}" for request in upstream.requests
    )


def test_paging_follows_what_came_back_when_jira_caps_max_results(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    upstream.jira_max_results_cap = 2
    pages = list(_connector(upstream, http, page_size=50).pages(cursor=None))
    assert len(fetched_ids(pages)) == 5
    starts = [request.params["startAt"] for request in upstream.requests_to(JIRA_SEARCH)]
    assert starts == ["0", "2", "4"]


def test_request_asks_for_the_useful_fields_when_searching(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    list(_connector(upstream, http).pages(cursor=None))
    assert upstream.requests[0].params["fields"] == (
        "summary,description,status,assignee,reporter,components,labels,issuetype,project,"
        "updated,issuelinks"
    )


def test_jql_combines_filter_and_cursor_minute_when_both_are_given(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    connector = _connector(upstream, http, jql="project = OPS")
    list(connector.pages(cursor="2024-03-02T09:00:30.500+00:00"))
    assert upstream.requests[0].params["jql"] == (
        '(project = OPS) AND updated >= "2024-03-02 09:00" ORDER BY updated ASC, key ASC'
    )


def test_jql_is_only_the_order_when_there_is_no_filter_or_cursor(http: ResilientHttp) -> None:
    connector = JiraConnector("https://jira.example", token=TOKEN, http=http)
    assert connector.jql(None) == "ORDER BY updated ASC, key ASC"


def test_jql_date_uses_the_profile_zone_when_one_is_configured(http: ResilientHttp) -> None:
    connector = JiraConnector(
        "https://jira.example", token=TOKEN, http=http, query_tz=ZoneInfo("Asia/Ho_Chi_Minh")
    )
    since = dt.datetime(2024, 3, 2, 20, 15, tzinfo=dt.UTC)
    assert connector.jql(since) == 'updated >= "2024-03-03 03:15" ORDER BY updated ASC, key ASC'


def test_filter_with_its_own_order_is_refused_when_configured(http: ResilientHttp) -> None:
    with pytest.raises(ValueError, match="ORDER BY"):
        JiraConnector("https://j.example", token=TOKEN, jql="project = X order by key", http=http)


def test_record_flattens_the_useful_fields_when_an_issue_is_fetched(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    upstream.jira_issues = [
        jira_issue(
            "OPS-9",
            summary="Máy chủ db1 hết dung lượng",
            updated="2024-03-01T10:00:00.000+0700",
            description="Xoá log cũ.\nRồi khởi động lại.",
            status={"name": "In Progress", "id": "3"},
            assignee={"displayName": "Lan Nguyễn", "accountId": "a1"},
            reporter={"displayName": "Minh Trần"},
            components=[{"name": "Database"}, {"name": "Storage"}],
            labels=["disk", "prod"],
            issuetype={"name": "Incident"},
            issuelinks=[
                {"type": {"name": "Blocks"}, "outwardIssue": {"key": "OPS-10"}},
                {"type": {"name": "Relates"}, "inwardIssue": {"key": "NET-2"}},
            ],
        )
    ]
    (page,) = list(_connector(upstream, http).pages(cursor=None))
    assert page.items == [
        SourceRecord(
            external_id="OPS-9",
            content="Máy chủ db1 hết dung lượng\n\nXoá log cũ.\nRồi khởi động lại.".encode(),
            mime="text/plain",
            url=f"{upstream.base_url}/browse/OPS-9",
            title="OPS-9: Máy chủ db1 hết dung lượng",
            updated_at=dt.datetime(2024, 3, 1, 3, 0, tzinfo=dt.UTC),
            fields={
                "key": "OPS-9",
                "summary": "Máy chủ db1 hết dung lượng",
                "status": "In Progress",
                "assignee": "Lan Nguyễn",
                "reporter": "Minh Trần",
                "components": ["Database", "Storage"],
                "labels": ["disk", "prod"],
                "issuetype": "Incident",
                "project": "OPS",
                "links": [
                    {"type": "Blocks", "direction": "outward", "key": "OPS-10"},
                    {"type": "Relates", "direction": "inward", "key": "NET-2"},
                ],
            },
        )
    ]


def test_content_is_the_summary_alone_when_there_is_no_description(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    first = next(iter(_connector(upstream, http).pages(cursor=None))).items[0]
    assert isinstance(first, SourceRecord)
    assert first.content == b"Disk full on db1"
    assert "assignee" not in first.fields


def test_last_page_claims_the_latest_update_when_the_run_completes(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    pages = list(_connector(upstream, http).pages(cursor=None))
    assert pages[-1].cursor == "2024-03-04T15:30:45.120000+00:00"
    assert pages[0].cursor == "2024-03-01T10:59:59.999999+00:00"


def test_second_run_fetches_only_newer_issues_when_given_the_stored_cursor(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    connector = _connector(upstream, http)
    stored = list(connector.pages(cursor=None))[-1].cursor
    upstream.jira_issues.append(
        jira_issue("OPS-6", summary="New alert", updated="2024-03-04T15:30:59.000+0000")
    )
    upstream.jira_issues[1]["fields"]["updated"] = "2024-03-05T08:00:00.000+0000"
    again = list(connector.pages(cursor=stored))
    assert fetched_ids(again) == ["OPS-6", "OPS-2"]
    assert again[-1].cursor == "2024-03-05T08:00:00+00:00"


def test_second_run_yields_nothing_when_nothing_changed(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    connector = _connector(upstream, http)
    stored = list(connector.pages(cursor=None))[-1].cursor
    assert list(connector.pages(cursor=stored)) == []


def test_malformed_issues_fail_alone_when_others_are_fine(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    del upstream.jira_issues[0]["key"]
    upstream.jira_issues[2]["fields"]["updated"] = "not a date"
    items = fetched(_connector(upstream, http).pages(cursor=None))
    failures = sorted(
        (item.reason, item.external_id.split()[0])
        for item in items
        if isinstance(item, RecordFailure)
    )
    # Without a key, the failure is named by its position in the search results.
    assert failures == [
        ("issue has no key", "issue"),
        ("issue has no valid `updated` timestamp", "OPS-3"),
    ]
    assert [item.external_id for item in items if isinstance(item, SourceRecord)] == [
        "OPS-2",
        "OPS-4",
        "OPS-5",
    ]


def test_server_error_is_retried_when_jira_answers_500_once(
    upstream: FakeUpstreams, http: ResilientHttp, sleep: RecordingSleep
) -> None:
    upstream.fail_next(Fault.server_error(500))
    assert len(fetched_ids(list(_connector(upstream, http).pages(cursor=None)))) == 5
    assert len(sleep.calls) == 1


def test_slow_answer_is_retried_when_it_exceeds_the_read_timeout(
    upstream: FakeUpstreams, sleep: RecordingSleep
) -> None:
    upstream.fail_next(Fault.slow(1.0))
    with quick_http(sleep, read_timeout_s=0.2) as http:
        assert len(fetched_ids(list(_connector(upstream, http).pages(cursor=None)))) == 5


def test_unauthorised_raises_without_the_token_when_jira_answers_401(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    upstream.fail_next(Fault.unauthorised())
    with pytest.raises(ConnectorError, match="401 Unauthorized: unauthorised") as failure:
        list(_connector(upstream, http).pages(cursor=None))
    assert TOKEN not in str(failure.value)
