"""SlackConnector through real httpx against a fake Slack Web API on 127.0.0.1."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pytest

from curation.adapters.connectors.http import ResilientHttp
from curation.adapters.connectors.slack import SlackConnector, ts_time
from curation.domain.errors import ConnectorError
from curation.domain.records import FetchPage, RecordFailure, SourceRecord
from tests.support.clock import RecordingSleep
from tests.support.fake_upstreams import (
    SLACK_HISTORY,
    TOKEN,
    FakeUpstreams,
    Fault,
    fetched,
    fetched_ids,
    slack_message,
)

CHANNEL = "C0OPS"


@pytest.fixture
def upstream() -> Iterator[FakeUpstreams]:
    with FakeUpstreams() as server:
        server.slack_messages[CHANNEL] = [
            slack_message("1709287200.000100", "db1 disk at 91%"),
            slack_message("1709287260.000200", "rotating logs now"),
            slack_message("1709287320.000300", "U999 joined", subtype="channel_join"),
            slack_message("1709290000.000400", "done, 40% free", thread_ts="1709287200.000100"),
            slack_message("1709299999.000500", "deploy at 5pm", subtype="bot_message"),
        ]
        yield server


def _connector(
    upstream: FakeUpstreams, http: ResilientHttp, *, token: str = TOKEN, channel: str = CHANNEL
) -> SlackConnector:
    return SlackConnector(
        token=token, channel=channel, base_url=upstream.base_url + "/api", page_size=2, http=http
    )


def test_pages_follow_next_cursor_when_history_spans_several_pages(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    pages = list(_connector(upstream, http).pages(cursor=None))
    assert fetched_ids(pages) == [
        f"{CHANNEL}:1709299999.000500",
        f"{CHANNEL}:1709290000.000400",
        f"{CHANNEL}:1709287260.000200",
        f"{CHANNEL}:1709287200.000100",
    ]
    requests = upstream.requests_to(SLACK_HISTORY)
    assert [request.params.get("cursor") is None for request in requests] == [True, False, False]
    assert all(request.params["limit"] == "2" for request in requests)
    assert all(request.headers["authorization"] == f"Bearer {TOKEN}" for request in requests)


def test_system_messages_are_skipped_when_they_have_a_non_content_subtype(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    ids = fetched_ids(list(_connector(upstream, http).pages(cursor=None)))
    assert f"{CHANNEL}:1709287320.000300" not in ids


def test_earlier_pages_keep_the_starting_cursor_when_older_pages_follow(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    pages = list(_connector(upstream, http).pages(cursor="1709280000.000000"))
    assert [page.cursor for page in pages] == [
        "1709280000.000000",
        "1709280000.000000",
        "1709299999.000500",
    ]


def test_last_page_claims_the_greatest_ts_when_the_run_completes(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    pages = list(_connector(upstream, http).pages(cursor=None))
    assert [page.cursor for page in pages] == [None, None, "1709299999.000500"]


def test_rerun_misses_nothing_when_a_run_stopped_after_its_first_page(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    connector = _connector(upstream, http)
    interrupted = next(iter(connector.pages(cursor=None)))
    rerun = list(connector.pages(cursor=interrupted.cursor))
    assert len(fetched_ids(rerun)) == 4


def test_second_run_fetches_only_newer_messages_when_given_the_stored_cursor(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    connector = _connector(upstream, http)
    stored = list(connector.pages(cursor=None))[-1].cursor
    upstream.slack_messages[CHANNEL].append(slack_message("1709300000.000600", "all clear"))
    again = list(connector.pages(cursor=stored))
    assert upstream.requests_to(SLACK_HISTORY)[-1].params["oldest"] == "1709299999.000500"
    assert fetched_ids(again) == [f"{CHANNEL}:1709300000.000600"]
    assert again[-1].cursor == "1709300000.000600"


def test_second_run_yields_nothing_when_the_channel_is_quiet(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    connector = _connector(upstream, http)
    stored = list(connector.pages(cursor=None))[-1].cursor
    assert list(connector.pages(cursor=stored)) == []


def test_cursor_passes_skipped_messages_when_the_newest_is_a_join(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    upstream.slack_messages[CHANNEL].append(
        slack_message("1709400000.000700", "U1 joined", subtype="channel_join")
    )
    pages = list(_connector(upstream, http).pages(cursor="1709299999.000500"))
    assert pages == [FetchPage(items=[], cursor="1709400000.000700")]


def test_record_carries_text_time_and_thread_when_a_reply_is_fetched(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    upstream.slack_messages[CHANNEL] = [
        slack_message(
            "1709290000.000400",
            "Đã xử lý xong, còn 40% dung lượng",
            thread_ts="1709287200.000100",
            permalink="https://acme.slack.com/archives/C0OPS/p1709290000000400",
        )
    ]
    (page,) = list(_connector(upstream, http).pages(cursor=None))
    assert page.items == [
        SourceRecord(
            external_id=f"{CHANNEL}:1709290000.000400",
            content="Đã xử lý xong, còn 40% dung lượng".encode(),
            mime="text/plain",
            url="https://acme.slack.com/archives/C0OPS/p1709290000000400",
            title="Đã xử lý xong, còn 40% dung lượng",
            updated_at=dt.datetime(2024, 3, 1, 10, 46, 40, 400, tzinfo=dt.UTC),
            fields={"user": "U024BE7LH", "thread_ts": "1709287200.000100"},
        )
    ]


def test_record_carries_what_a_message_shared_when_it_shares_files(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    upstream.slack_messages[CHANNEL] = [
        slack_message(
            "1709290000.000400", "new runbook", subtype="file_share",
            files=[{"title": "DB failover", "mimetype": "application/pdf"},
                   {"mimetype": "image/png", "alt_txt": "grafana: disk at 91%"},
                   {"url_private": "https://files.slack.com/x.png"}],
        ),
        slack_message("1709290001.000500", "", attachments=[{"fallback": "Build #12 passed"}]),
    ]  # fmt: skip
    (page,) = list(_connector(upstream, http).pages(cursor=None))
    assert sorted(record.content.decode() for record in page.items) == [
        "[file: Build #12 passed]",
        # A file known only by its address is left out: nothing is fetched.
        "new runbook [file: DB failover] [image: grafana: disk at 91%]",
    ]


def test_ts_keeps_microseconds_when_converted_to_a_time() -> None:
    assert ts_time("1709290000.000001").microsecond == 1


def test_message_without_ts_fails_alone_when_others_are_fine(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    upstream.slack_messages[CHANNEL][1] = {"type": "message", "text": "lost ts"}
    items = fetched(_connector(upstream, http).pages(cursor=None))
    failures = [item for item in items if isinstance(item, RecordFailure)]
    assert [failure.reason for failure in failures] == ["message has no valid ts: None"]
    assert len(items) == 4


def test_slack_error_raises_when_the_channel_is_unknown(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    with pytest.raises(ConnectorError, match="failed: channel_not_found"):
        list(_connector(upstream, http, channel="C0NOPE").pages(cursor=None))


def test_invalid_auth_raises_without_the_token_when_slack_rejects_it(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    wrong = "xoxb-" + TOKEN
    with pytest.raises(ConnectorError, match="invalid_auth: unauthorised") as failure:
        list(_connector(upstream, http, token=wrong).pages(cursor=None))
    assert wrong not in str(failure.value)


def test_ratelimited_error_is_retried_when_slack_answers_ok_false(
    upstream: FakeUpstreams, http: ResilientHttp, sleep: RecordingSleep
) -> None:
    upstream.fail_next(Fault.slack_error("ratelimited", retry_after="4"))
    assert len(fetched_ids(list(_connector(upstream, http).pages(cursor=None)))) == 4
    assert sleep.calls == [4.0]


def test_http_429_is_waited_out_when_slack_sends_retry_after(
    upstream: FakeUpstreams, http: ResilientHttp, sleep: RecordingSleep
) -> None:
    upstream.fail_next(Fault.rate_limited("30"))
    assert len(fetched_ids(list(_connector(upstream, http).pages(cursor=None)))) == 4
    assert sleep.calls == [30.0]


def test_persistent_rate_limit_raises_when_retries_run_out(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    upstream.fail_next(*[Fault.slack_error("ratelimited")] * 4)
    with pytest.raises(ConnectorError, match="last: Slack error ratelimited"):
        list(_connector(upstream, http).pages(cursor=None))


def test_corrupt_cursor_raises_when_it_is_not_a_ts(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    with pytest.raises(ConnectorError, match="not a Slack ts"):
        list(_connector(upstream, http).pages(cursor="--oldest"))
