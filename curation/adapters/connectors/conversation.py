"""Conversation transcripts in a folder: JSON, JSON lines, Slack exports and Markdown.

The folder is read as the Markdown connector reads one (by git commit or mtime, confined
by the source policy); each file is one conversation. JSON and JSON-lines files and the
day files of a Slack export are stored as the Markdown transcript they read as
(`curation.domain.transcripts`); a Markdown or text file is stored as written and read
as a transcript by the extractor. A file that is not a conversation fails alone, with
its reason. A Slack export's `users.json` names the speakers of its messages.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from curation.adapters.connectors.markdown import Item, MarkdownFolderConnector, markdown_title
from curation.domain.records import FetchPage, SourceRecord
from curation.domain.transcripts import (
    SLACK_METADATA_FILES,
    from_json,
    from_json_lines,
    from_slack_day,
    is_slack_day,
    slack_users,
)

CONVERSATION_PATTERNS = ("**/*.json", "**/*.jsonl", "**/*.md", "**/*.markdown", "**/*.txt")
TRANSCRIPT_MIME = "text/markdown"


class ConversationFolderConnector(MarkdownFolderConnector):
    """Connector over a folder of conversation files (see the module docstring)."""

    kind = "conversation"

    def __init__(
        self,
        root: Path,
        *,
        patterns: Sequence[str] = CONVERSATION_PATTERNS,
        zone: dt.tzinfo = dt.UTC,
        **options: Any,
    ) -> None:
        super().__init__(root, patterns=patterns, **options)
        self._zone = zone
        self._users: dict[str, dict[str, str]] = {}  # users.json path -> id -> name

    def __repr__(self) -> str:
        return f"ConversationFolderConnector({str(self._root)!r})"

    def pages(self, *, cursor: str | None) -> Iterator[FetchPage]:
        self._users = {}  # read again each run: an export may have been replaced
        yield from super().pages(cursor=cursor)

    def _matches(self, relative: str) -> bool:
        return Path(relative).name not in SLACK_METADATA_FILES and super()._matches(relative)

    def _slack_users(self, relative: str) -> dict[str, str]:
        """The names in the users.json of the export the file belongs to (beside its
        channel folder, or at the root), read with the same checks as any file."""
        names: dict[str, str] = {}
        parent = Path(relative).parent
        for folder in dict.fromkeys((Path("."), parent.parent, parent)):
            listed = (folder / "users.json").as_posix()
            if listed not in self._users:
                loaded = self._load(listed) if (self._root / listed).is_file() else None
                self._users[listed] = (
                    slack_users(loaded[0].decode("utf-8", "replace"))
                    if isinstance(loaded, tuple)
                    else {}
                )
            names.update(self._users[listed])
        return names

    def _decoded(self, relative: str, data: bytes, mtime_ns: int) -> Item:
        item = super()._decoded(relative, data, mtime_ns)
        if not isinstance(item, SourceRecord):
            return item
        suffix = Path(relative).suffix.lower()
        if suffix not in {".json", ".jsonl"}:
            text = data.decode("utf-8")
            title = markdown_title(text) or Path(relative).stem
            return _record(item, content=data, title=title)
        text = data.decode("utf-8")
        name = Path(relative).stem
        try:
            if suffix == ".jsonl":
                title, transcript = from_json_lines(text, name=name, zone=self._zone)
            elif is_slack_day(_json_or_none(text)):
                channel = Path(relative).parent.name
                day = f"#{channel} {name}" if channel else name
                users = self._slack_users(relative)
                title, transcript = from_slack_day(text, name=day, users=users, zone=self._zone)
            else:
                title, transcript = from_json(text, name=name, zone=self._zone)
        except ValueError as error:
            return self._failure(relative, f"not a conversation: {error}")
        return _record(item, content=transcript.encode("utf-8"), title=title)


def _json_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _record(item: SourceRecord, *, content: bytes, title: str) -> SourceRecord:
    return SourceRecord(
        external_id=item.external_id,
        content=content,
        mime=TRANSCRIPT_MIME,
        url=item.url,
        title=" ".join(title.split())[:300],
        updated_at=item.updated_at,
    )
