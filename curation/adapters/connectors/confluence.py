"""Confluence Cloud pages through the REST content search (CQL), as plain text."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping
from typing import Any

from curation.adapters.connectors.http import OwnsHttp, ResilientHttp
from curation.adapters.connectors.storage_text import storage_to_text
from curation.adapters.connectors.timefeed import (
    TimeCursor,
    parse_cursor,
    parse_instant,
    query_minute,
)
from curation.domain.errors import ConnectorError
from curation.domain.records import FetchPage, RecordFailure, SourceRecord
from curation.domain.source_policy import SourcePolicy

_SEARCH = "/wiki/rest/api/content/search"
_EXPAND = "body.storage,version,space"
_CQL_DATE = "%Y/%m/%d %H:%M"


def _cql_quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class ConfluenceConnector(OwnsHttp):
    """Connector over Confluence Cloud's CQL content search, oldest change first.

    `query_tz` is the zone Confluence reads CQL dates in (the site's, not UTC, on Cloud);
    a wrong zone only widens or narrows the server-side prefilter by hours, and the
    exact filter on `version.when` still runs here, so set it to avoid missing changes
    when the site is west of UTC.
    """

    kind = "confluence"

    def __init__(
        self,
        base_url: str,
        *,
        token: str,
        space: str | None = None,
        page_size: int = 50,
        http: ResilientHttp | None = None,
        query_tz: dt.tzinfo = dt.UTC,
        policy: SourcePolicy | None = None,
    ) -> None:
        if page_size < 1:
            raise ValueError("page_size must be at least 1")
        self._base = base_url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}"}
        self._space = space
        self._page_size = page_size
        self._use_http(http, policy)
        self._query_tz = query_tz

    def __repr__(self) -> str:
        return f"ConfluenceConnector({self._base!r}, space={self._space!r})"

    def cql(self, since: dt.datetime | None) -> str:
        """The CQL that finds pages changed at or after `since`'s minute, oldest first."""
        clauses = ["type=page"]
        if since is not None:
            minute = query_minute(since, tz=self._query_tz, fmt=_CQL_DATE)
            clauses.append(f'lastmodified >= "{minute}"')
        if self._space:
            clauses.append(f"space={_cql_quote(self._space)}")
        return " AND ".join(clauses) + " ORDER BY lastmodified ASC"

    def pages(self, *, cursor: str | None) -> Iterator[FetchPage]:
        """Yield search results page by page, following `_links.next` until it is absent."""
        feed = TimeCursor(parse_cursor(cursor))
        url: str | None = self._base + _SEARCH
        params: dict[str, str | int] | None = {
            "cql": self.cql(feed.since),
            "expand": _EXPAND,
            "limit": self._page_size,
            "start": 0,
        }
        while url:
            payload = self._http.get_json(url, params=params, headers=self._headers)
            results, next_url = self._unpack(payload)
            items = self._records(results, feed)
            claimed = feed.claim(last_page=next_url is None)
            if items or feed.moved(claimed):
                yield FetchPage(items=items, cursor=claimed)
            if next_url == url:
                raise ConnectorError("Confluence's next link repeats the page it is on")
            # The next link carries every query parameter itself.
            url, params = next_url, None

    def _unpack(self, payload: Any) -> tuple[list[Any], str | None]:
        if not isinstance(payload, Mapping) or not isinstance(payload.get("results"), list):
            raise ConnectorError("Confluence search answered without a `results` list")
        links = payload.get("_links")
        links = links if isinstance(links, Mapping) else {}
        next_link = links.get("next")
        if not isinstance(next_link, str) or not next_link:
            return payload["results"], None
        return payload["results"], self._resolve(next_link, links)

    def _resolve(self, link: str, links: Mapping[str, Any]) -> str:
        """An absolute URL for a `_links.next`, always on the configured site."""
        if "://" in link:
            # The bearer token goes wherever this points: never off the configured site.
            if not link.startswith(self._base + "/"):
                raise ConnectorError("Confluence's next link points off the configured site")
            return link
        # Cloud's links are relative to `_links.base` (site + "/wiki" context).
        context = links.get("context")
        context = context if isinstance(context, str) else "/wiki"
        if context and link.startswith(context + "/"):
            return self._base + link
        return self._base + context + link

    def _records(self, results: list[Any], feed: TimeCursor) -> list[SourceRecord | RecordFailure]:
        items: list[SourceRecord | RecordFailure] = []
        for position, result in enumerate(results):
            item, when = self._record(result, position)
            if when is not None and not feed.is_new(when):
                continue  # the minute-wide CQL date also matches what was already yielded
            if when is not None:
                feed.see(when)
            items.append(item)
        return items

    def _record(
        self, result: Any, position: int
    ) -> tuple[SourceRecord | RecordFailure, dt.datetime | None]:
        if not isinstance(result, Mapping):
            return RecordFailure(f"result {position}", "search result is not an object"), None
        page_id = str(result.get("id") or "").strip()
        url = self._page_url(result)
        version = _mapping(result.get("version"))
        when = parse_instant(version.get("when"))
        body = _mapping(_mapping(result.get("body")).get("storage")).get("value")
        reason = _missing(page_id=page_id, body=body, when=when)
        if reason or not isinstance(body, str) or when is None:
            return RecordFailure(page_id or f"result {position}", reason, url=url), when
        fields = {
            key: value
            for key, value in (
                ("space", _mapping(result.get("space")).get("key")),
                ("version", version.get("number")),
            )
            if value is not None
        }
        record = SourceRecord(
            external_id=page_id,
            content=storage_to_text(body).encode(),
            mime="text/plain",
            url=url,
            title=str(result.get("title") or page_id),
            updated_at=when,
            fields=fields,
        )
        return record, when

    def _page_url(self, result: Mapping[str, Any]) -> str:
        webui = _mapping(result.get("_links")).get("webui")
        return f"{self._base}/wiki{webui}" if isinstance(webui, str) and webui else ""


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _missing(*, page_id: str, body: Any, when: dt.datetime | None) -> str:
    """Why a search result cannot become a record, or "" when it can."""
    if not page_id:
        return "search result has no id"
    if not isinstance(body, str):
        return "search result has no body.storage.value (was body.storage expanded?)"
    if when is None:
        return "search result has no valid version.when"
    return ""
