"""Jira issues through the REST v2 search (JQL), with their useful fields flattened."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping
from typing import Any

from curation.adapters.connectors.http import OwnsHttp, ResilientHttp
from curation.adapters.connectors.timefeed import (
    TimeCursor,
    parse_cursor,
    parse_instant,
    query_minute,
)
from curation.domain.errors import ConnectorError
from curation.domain.records import FetchPage, RecordFailure, SourceRecord
from curation.domain.source_policy import SourcePolicy

_SEARCH = "/rest/api/2/search"
_FIELDS = (
    "summary,description,status,assignee,reporter,components,labels,issuetype,project,"
    "updated,issuelinks"
)
_JQL_DATE = "%Y-%m-%d %H:%M"


class JiraConnector(OwnsHttp):
    """Connector over Jira's JQL search, oldest update first, paged by startAt/total.

    `query_tz` is the zone Jira reads JQL dates in (the token user's profile zone); the
    exact filter on `updated` runs here, so a wrong zone costs refetches, or, west of
    UTC, misses. Offset paging over a live result set can skip an issue when another is
    edited mid-run (it moves to the end); the key tie-breaker keeps the order stable
    otherwise.
    """

    kind = "jira"

    def __init__(
        self,
        base_url: str,
        *,
        token: str,
        jql: str = "",
        page_size: int = 50,
        http: ResilientHttp | None = None,
        query_tz: dt.tzinfo = dt.UTC,
        policy: SourcePolicy | None = None,
    ) -> None:
        if page_size < 1:
            raise ValueError("page_size must be at least 1")
        if "order by" in jql.lower():
            raise ValueError("the JQL filter must not have ORDER BY: the connector sets the order")
        self._base = base_url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}"}
        self._filter = jql.strip()
        self._page_size = page_size
        self._use_http(http, policy)
        self._query_tz = query_tz

    def __repr__(self) -> str:
        return f"JiraConnector({self._base!r}, jql={self._filter!r})"

    def jql(self, since: dt.datetime | None) -> str:
        """The configured filter AND updated at or after `since`'s minute, oldest first."""
        clauses = [f"({self._filter})"] if self._filter else []
        if since is not None:
            minute = query_minute(since, tz=self._query_tz, fmt=_JQL_DATE)
            clauses.append(f'updated >= "{minute}"')
        where = " AND ".join(clauses)
        return f"{where} ORDER BY updated ASC, key ASC".strip()

    def pages(self, *, cursor: str | None) -> Iterator[FetchPage]:
        """Yield search results page by page until startAt reaches total."""
        feed = TimeCursor(parse_cursor(cursor))
        query = self.jql(feed.since)
        start = 0
        while True:
            params: dict[str, str | int] = {
                "jql": query,
                "startAt": start,
                "maxResults": self._page_size,
                "fields": _FIELDS,
            }
            payload = self._http.get_json(
                self._base + _SEARCH, params=params, headers=self._headers
            )
            issues, total = _unpack(payload)
            # Jira may cap maxResults below what was asked: advance by what came back.
            start += len(issues)
            last_page = not issues or (total is not None and start >= total)
            items = self._records(issues, feed, offset=start - len(issues))
            claimed = feed.claim(last_page=last_page)
            if items or feed.moved(claimed):
                yield FetchPage(items=items, cursor=claimed)
            if last_page:
                return

    def _records(
        self, issues: list[Any], feed: TimeCursor, *, offset: int
    ) -> list[SourceRecord | RecordFailure]:
        items: list[SourceRecord | RecordFailure] = []
        for position, issue in enumerate(issues, start=offset):
            item, when = self._record(issue, position)
            if when is not None and not feed.is_new(when):
                continue  # the minute-wide JQL date also matches what was already yielded
            if when is not None:
                feed.see(when)
            items.append(item)
        return items

    def _record(
        self, issue: Any, position: int
    ) -> tuple[SourceRecord | RecordFailure, dt.datetime | None]:
        if not isinstance(issue, Mapping):
            return RecordFailure(f"issue {position}", "search result is not an object"), None
        key = str(issue.get("key") or "").strip()
        fields = issue.get("fields")
        url = f"{self._base}/browse/{key}" if key else ""
        if not key or not isinstance(fields, Mapping):
            reason = "issue has no key" if not key else "issue has no fields object"
            return RecordFailure(key or f"issue {position}", reason, url=url), None
        when = parse_instant(fields.get("updated"))
        if when is None:
            return RecordFailure(key, "issue has no valid `updated` timestamp", url=url), None
        summary = _text(fields.get("summary")).strip()
        description = _text(fields.get("description")).strip()
        record = SourceRecord(
            external_id=key,
            content="\n\n".join(part for part in (summary, description) if part).encode(),
            mime="text/plain",
            url=url,
            title=f"{key}: {summary}" if summary else key,
            updated_at=when,
            fields=flatten_fields(key, fields),
        )
        return record, when


def _unpack(payload: Any) -> tuple[list[Any], int | None]:
    """The issues and the total; without a total, paging goes on until a page is empty."""
    if not isinstance(payload, Mapping) or not isinstance(payload.get("issues"), list):
        raise ConnectorError("Jira search answered without an `issues` list")
    total = payload.get("total")
    issues: list[Any] = payload["issues"]
    return issues, total if isinstance(total, int) else None


def _get(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, Mapping) else None


def _name(value: Any, key: str = "name") -> str | None:
    found = _get(value, key)
    return found if isinstance(found, str) and found else None


def _text(value: Any) -> str:
    """Plain text of a v2 string field, or of an Atlassian Document Format node (v3 shape)."""
    if isinstance(value, str):
        return value
    if not isinstance(value, Mapping):
        return ""
    if value.get("type") == "text":
        return str(value.get("text") or "")
    children = value.get("content")
    parts = [_text(child) for child in children] if isinstance(children, list) else []
    separator = "\n" if value.get("type") in {"doc", "bulletList", "orderedList"} else ""
    return separator.join(part for part in parts if part)


def _links(value: Any) -> list[dict[str, str]]:
    links: list[dict[str, str]] = []
    for link in value if isinstance(value, list) else []:
        kind = _name(_get(link, "type"))
        for direction in ("outward", "inward"):
            other = _name(_get(link, f"{direction}Issue"), "key")
            if kind and other:
                links.append({"type": kind, "direction": direction, "key": other})
    return links


def flatten_fields(key: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    """The issue's useful fields as plain values; absent or empty ones are left out."""
    components = [name for c in fields.get("components") or [] if (name := _name(c))]
    labels = [label for label in fields.get("labels") or [] if isinstance(label, str) and label]
    flat: dict[str, Any] = {
        "key": key,
        "summary": _text(fields.get("summary")).strip() or None,
        "status": _name(fields.get("status")),
        "assignee": _name(fields.get("assignee"), "displayName"),
        "reporter": _name(fields.get("reporter"), "displayName"),
        "components": components,
        "labels": labels,
        "issuetype": _name(fields.get("issuetype")),
        "project": _name(fields.get("project"), "key"),
        "links": _links(fields.get("issuelinks")),
    }
    return {name: value for name, value in flat.items() if value not in (None, [])}
