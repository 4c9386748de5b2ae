"""One Slack channel's messages through conversations.history.

Cursor semantics. The cursor is the greatest message `ts` yielded (Slack's own string,
e.g. "1712345678.000200"), passed back as `oldest`, which Slack treats as exclusive.
Slack answers newest first and `next_cursor` walks towards older messages, so the first
page holds the newest messages of the run. Claiming their `ts` after that page would be
wrong: if the run stopped before the older pages, the next run would start above them
and never fetch them. So every page but the last carries the cursor the run started
from, and only the last page, once every older message back to `oldest` is in, carries
the greatest `ts` seen. An interrupted run repeats from the old cursor (records are
keyed by `channel:ts`, so repeats are harmless); none ever skips a message.

Messages posted while a run pages backwards are newer than its first page and are
picked up by the next run. Thread replies (conversations.replies) and edits of old
messages are not fetched: `oldest` only moves forward over top-level messages.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import Any

from curation.adapters.connectors.http import OwnsHttp, ResilientHttp
from curation.domain.errors import ConnectorError
from curation.domain.records import FetchPage, RecordFailure, SourceRecord
from curation.domain.source_policy import SLACK_BASE_URL, SourcePolicy
from curation.domain.transcripts import attachments

_TS = re.compile(r"^\d{1,12}\.\d{1,9}$")
_ERROR_CODE = re.compile(r"^[a-z0-9_]{1,64}$")
# Subtypes that carry what someone wrote; joins, topic changes and the like are skipped.
_CONTENT_SUBTYPES = frozenset({None, "bot_message", "thread_broadcast", "file_share", "me_message"})
_AUTH_ERRORS = frozenset(
    {
        "not_authed", "invalid_auth", "account_inactive", "token_revoked", "token_expired",
        "no_permission", "missing_scope", "not_allowed_token_type",
    }
)  # fmt: skip
_TITLE_CHARS = 80


def _ratelimited(payload: Any) -> str | None:
    """Slack may throttle with HTTP 200 and ok:false; that is retried like a 429."""
    if isinstance(payload, Mapping) and payload.get("error") == "ratelimited":
        return "Slack error ratelimited"
    return None


def ts_time(ts: str) -> dt.datetime:
    """The UTC instant of a Slack ts, to the microsecond, without float rounding."""
    seconds, _, fraction = ts.partition(".")
    micros = int(fraction[:6].ljust(6, "0"))
    return dt.datetime.fromtimestamp(int(seconds), dt.UTC) + dt.timedelta(microseconds=micros)


class SlackConnector(OwnsHttp):
    """Connector over conversations.history for one channel (see the module docstring)."""

    kind = "slack"

    def __init__(
        self,
        *,
        token: str,
        channel: str,
        base_url: str = SLACK_BASE_URL,
        page_size: int = 200,
        http: ResilientHttp | None = None,
        policy: SourcePolicy | None = None,
    ) -> None:
        if page_size < 1:
            raise ValueError("page_size must be at least 1")
        if not channel:
            raise ValueError("a Slack channel id is required")
        self._headers = {"Authorization": f"Bearer {token}"}
        self._channel = channel
        self._url = base_url.rstrip("/") + "/conversations.history"
        self._page_size = page_size
        self._use_http(http, policy)

    def __repr__(self) -> str:
        return f"SlackConnector(channel={self._channel!r})"

    def pages(self, *, cursor: str | None) -> Iterator[FetchPage]:
        """Yield the channel's messages newer than `cursor`, newest page first."""
        if cursor is not None and not _TS.match(cursor):
            raise ConnectorError(f"stored cursor {cursor!r} is not a Slack ts")
        newest: str | None = None
        next_cursor = ""
        while True:
            payload = self._history(oldest=cursor, next_cursor=next_cursor)
            messages, next_cursor = _unpack(payload)
            items: list[SourceRecord | RecordFailure] = []
            for position, message in enumerate(messages):
                item, ts = self._record(message, position)
                if ts is not None and (newest is None or Decimal(ts) > Decimal(newest)):
                    newest = ts  # skipped subtypes count too: they were looked at
                if item is not None:
                    items.append(item)
            last_page = not next_cursor
            claimed = _later(newest, cursor) if last_page else cursor
            if items or claimed != cursor:
                yield FetchPage(items=items, cursor=claimed)
            if last_page:
                return

    def _history(self, *, oldest: str | None, next_cursor: str) -> Any:
        params: dict[str, str | int] = {"channel": self._channel, "limit": self._page_size}
        if oldest is not None:
            params["oldest"] = oldest
        if next_cursor:
            params["cursor"] = next_cursor
        return self._http.get_json(
            self._url, params=params, headers=self._headers, retry_signal=_ratelimited
        )

    def _record(
        self, message: Any, position: int
    ) -> tuple[SourceRecord | RecordFailure | None, str | None]:
        """The record for a message (None for a skipped subtype) and its ts, if valid."""
        if not isinstance(message, Mapping):
            failure = RecordFailure(f"{self._channel}:#{position}", "message is not an object")
            return failure, None
        ts = message.get("ts")
        if not isinstance(ts, str) or not _TS.match(ts):
            failure = RecordFailure(
                f"{self._channel}:#{position}", f"message has no valid ts: {ts!r}"
            )
            return failure, None
        if message.get("subtype") not in _CONTENT_SUBTYPES:
            return None, ts
        text = message.get("text")
        # What the message shared (files, unfurled links) is part of what it said.
        text = " ".join(
            part for part in (text if isinstance(text, str) else "", *attachments(message)) if part
        )
        fields = {
            name: value
            for name, value in (
                ("user", message.get("user") or message.get("bot_id")),
                ("thread_ts", message.get("thread_ts")),
            )
            if value
        }
        permalink = message.get("permalink")
        record = SourceRecord(
            external_id=f"{self._channel}:{ts}",
            content=text.encode(),
            mime="text/plain",
            url=permalink if isinstance(permalink, str) else "",
            title=text.strip().split("\n", 1)[0][:_TITLE_CHARS],
            updated_at=ts_time(ts),
            fields=fields,
        )
        return record, ts


def _later(a: str | None, b: str | None) -> str | None:
    """The greater of two ts strings (compared as numbers: "9.1" < "10.0")."""
    if a is None or b is None:
        return a or b
    return a if Decimal(a) > Decimal(b) else b


def _unpack(payload: Any) -> tuple[list[Any], str]:
    """The messages and the next page's cursor ("" on the last page); errors raise."""
    if not isinstance(payload, Mapping):
        raise ConnectorError("Slack answered with something other than a JSON object")
    if payload.get("ok") is not True:
        raise ConnectorError(_error_message(payload.get("error")))
    messages = payload.get("messages")
    if not isinstance(messages, list):
        raise ConnectorError("Slack conversations.history answered without a `messages` list")
    metadata = payload.get("response_metadata")
    next_cursor = metadata.get("next_cursor") if isinstance(metadata, Mapping) else None
    return messages, next_cursor if isinstance(next_cursor, str) else ""


def _error_message(error: Any) -> str:
    # Only a plain error code is echoed, never an arbitrary string from the answer.
    code = error if isinstance(error, str) and _ERROR_CODE.match(error) else "unknown_error"
    if code in _AUTH_ERRORS:
        return f"Slack conversations.history: {code}: unauthorised; check the token and its scopes"
    return f"Slack conversations.history failed: {code}"
