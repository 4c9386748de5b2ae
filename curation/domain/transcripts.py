"""Conversation files read into transcripts: JSON, JSON lines and Slack exports (pure).

Each reader returns the Markdown transcript (`conversation.render_transcript`) a
conversation source stores, or raises ValueError saying why the file is not one. Shapes
read (keys are matched case-sensitively, the first present wins):

- JSON `{"title"?, "sessions": [{"title"?, "date"?, "turns": [turn, ...]}, ...]}`, or
  `{"title"?, "date"?, "turns": [...]}`, or a list of turns. `messages` may stand for
  `turns`; a session's time may be under `date`, `time`, `date_time` or `started_at`.
- A turn: `{"speaker", "text", "time"?, "attachments"?}`; the speaker may be under
  `speaker`, `author`, `user`, `name`, `from` or `role`, the text under `text`,
  `content`, `message` or `body`, its time under `time`, `timestamp`, `date`, `ts` or
  `created_at` (ISO, a written date, or seconds since the epoch).
- What a turn shared (`attachments`, `files`, `images` or `media`: a list of objects, or
  of strings that describe them) is part of what was said: each is written after the
  turn's words as `[image: a photo of a lake at dusk]` or `[file: Q3 plan.pdf]` (or
  `video`, `audio`: what its type or MIME type says), with its description (`caption`,
  `alt_text`, `alt_txt`, `alt`, `description`, `title`, `fallback` or `name`, the first
  present). Nothing is fetched: an address alone says nothing and is left out. A turn
  that only shared something is a turn.
- JSON lines: one turn per line; a line's `session` (and `session_date`) starts a new
  session when it changes.
- A Slack export day file (`<channel>/<YYYY-MM-DD>.json`: a list of messages with
  `ts`): each message a turn at its `ts`, named from the export's `users.json` when the
  message has no profile; joins, topic changes and other housekeeping are left out.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from curation.domain.conversation import (
    WrittenSession,
    WrittenTurn,
    parse_when,
    render_transcript,
)

SPEAKER_KEYS = ("speaker", "author", "user", "name", "from", "role")
TEXT_KEYS = ("text", "content", "message", "body")
TIME_KEYS = ("time", "timestamp", "date", "ts", "created_at", "date_time")
SESSION_TIME_KEYS = ("date", "time", "date_time", "started_at", "timestamp")
TURN_LIST_KEYS = ("turns", "messages")
ATTACHMENT_LIST_KEYS = ("attachments", "files", "images", "media")
ATTACHMENT_TEXT_KEYS = (
    "caption", "alt_text", "alt_txt", "alt", "description", "title", "fallback", "name"
)  # fmt: skip
ATTACHMENT_KIND_KEYS = ("type", "mimetype", "mime_type", "filetype", "content_type")
IMAGE_FILETYPES = frozenset({"png", "jpg", "jpeg", "gif", "webp", "heic", "bmp", "svg", "tiff"})
MAX_ATTACHMENT_CHARS = 300  # a description longer than this is cut (an unfurled page)
MAX_ATTACHMENTS = 10  # per turn
# Slack subtypes that carry what someone wrote; joins, topic changes and the like do not.
SLACK_CONTENT_SUBTYPES = frozenset(
    {None, "bot_message", "thread_broadcast", "file_share", "me_message"}
)
# Files of a Slack export that describe it rather than hold a conversation.
SLACK_METADATA_FILES = frozenset(
    {"users.json", "channels.json", "groups.json", "dms.json", "mpims.json",
     "integration_logs.json", "canvases.json", "huddles.json"}
)  # fmt: skip
MAX_TURNS = 100_000


def _first(row: Mapping[str, Any], keys: Iterable[str]) -> Any:
    return next((row[key] for key in keys if row.get(key) not in (None, "")), None)


def instant(value: Any, zone: dt.tzinfo) -> dt.datetime | None:
    """A time as JSON gives it: seconds since the epoch (number or numeric string, as
    Slack's ts), an ISO or written date; None when it is none of these."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float) or (
        isinstance(value, str) and value.replace(".", "", 1).isdigit() and len(value) >= 9
    ):
        try:
            seconds = Decimal(str(value))
            whole = int(seconds)
            micros = int((seconds - whole) * 1_000_000)
            return dt.datetime.fromtimestamp(whole, dt.UTC) + dt.timedelta(microseconds=micros)
        except (InvalidOperation, OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str):
        return parse_when(value, zone)
    return None


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # content as a list of parts ({"type": "text", "text": ...})
        return " ".join(
            part.get("text", "") if isinstance(part, Mapping) else str(part) for part in value
        )
    return "" if value is None else str(value)


def _attachment_kind(item: Mapping[str, Any], listed_as: str) -> str:
    """The kind shown ("image", "video", "audio" or "file"): what the attachment's type,
    MIME type or file type says, else what the list it came in is called."""
    kind = _first(item, ATTACHMENT_KIND_KEYS)
    if isinstance(kind, str) and kind.strip():
        kind = kind.strip().casefold()
        if kind in IMAGE_FILETYPES:
            return "image"
        return next((k for k in ("image", "video", "audio") if kind.startswith(k)), "file")
    return "image" if listed_as == "images" else "file"


def attachments(row: Mapping[str, Any]) -> list[str]:
    """What a turn (or a Slack message) shared, each as it is written after its words:
    `[image: caption]`, `[file: title]`; those with no description are left out."""
    shown: list[str] = []
    for key in ATTACHMENT_LIST_KEYS:
        items = row.get(key)
        if isinstance(items, Mapping):
            items = [items]
        if not isinstance(items, list):
            continue
        for item in items:
            if isinstance(item, Mapping):
                said = _first(item, ATTACHMENT_TEXT_KEYS)
                kind = _attachment_kind(item, key)
            else:
                said, kind = item, "image" if key == "images" else "file"
            said = " ".join(said.split()) if isinstance(said, str) else ""
            if said and not said.casefold().startswith(("http://", "https://")):
                if len(said) > MAX_ATTACHMENT_CHARS:
                    said = said[:MAX_ATTACHMENT_CHARS].rsplit(" ", 1)[0] + " \u2026"
                shown.append(f"[{kind}: {said.replace('[', '(').replace(']', ')')}]")
    return shown[:MAX_ATTACHMENTS]


def _with_attachments(text: str, row: Mapping[str, Any]) -> str:
    return " ".join(part for part in (text.strip(), *attachments(row)) if part)


def _turn(row: Any, where: str, zone: dt.tzinfo) -> WrittenTurn | None:
    if not isinstance(row, Mapping):
        raise ValueError(f"{where} is not an object")
    speaker = _first(row, SPEAKER_KEYS)
    if isinstance(speaker, Mapping):  # {"name": ...} or a profile
        speaker = _first(speaker, ("real_name", "display_name", "name", "id"))
    text = _with_attachments(_text(_first(row, TEXT_KEYS)), row)
    if not text.strip():
        return None
    if speaker is None or not str(speaker).strip():
        raise ValueError(f"{where} has no speaker (one of: {', '.join(SPEAKER_KEYS)})")
    return WrittenTurn(str(speaker), text, instant(_first(row, TIME_KEYS), zone))


def _turns(rows: Any, where: str, zone: dt.tzinfo) -> list[WrittenTurn]:
    if not isinstance(rows, list):
        raise ValueError(f"{where} is not a list of turns")
    if len(rows) > MAX_TURNS:
        raise ValueError(f"{where} holds {len(rows)} turns, over the cap of {MAX_TURNS}")
    turns = [_turn(row, f"{where}[{n}]", zone) for n, row in enumerate(rows)]
    return [turn for turn in turns if turn is not None]


def _session(row: Any, number: int, zone: dt.tzinfo) -> WrittenSession:
    where = f"sessions[{number - 1}]"
    if isinstance(row, list):
        turns = _turns(row, where, zone)
        return WrittenSession(f"Session {number}", _earliest(turns), turns)
    if not isinstance(row, Mapping):
        raise ValueError(f"{where} is not an object")
    rows = _first(row, TURN_LIST_KEYS)
    turns = _turns(rows if rows is not None else [], f"{where}.turns", zone)
    said = instant(_first(row, SESSION_TIME_KEYS), zone) or _earliest(turns)
    title = row.get("title") if isinstance(row.get("title"), str) else ""
    return WrittenSession(title or f"Session {number}", said, turns)


def _earliest(turns: Iterable[WrittenTurn]) -> dt.datetime | None:
    return min((turn.said for turn in turns if turn.said is not None), default=None)


def from_json(data: str, *, name: str, zone: dt.tzinfo = dt.UTC) -> tuple[str, str]:
    """(title, Markdown transcript) of a JSON conversation; ValueError says why not."""
    try:
        value = json.loads(data)
    except json.JSONDecodeError as error:
        raise ValueError(f"not JSON: {error.msg} at line {error.lineno}") from None
    title = name
    if isinstance(value, Mapping):
        if isinstance(value.get("title"), str) and value["title"].strip():
            title = value["title"]
        if isinstance(value.get("sessions"), list):
            sessions = [_session(row, n, zone) for n, row in enumerate(value["sessions"], 1)]
        elif _first(value, TURN_LIST_KEYS) is not None:
            sessions = [_session(value, 1, zone)]
        else:
            raise ValueError("a conversation object needs `sessions` or `turns` (or `messages`)")
    elif isinstance(value, list):
        sessions = [WrittenSession("Session 1", None, _turns(value, "turns", zone))]
        sessions = [replace_said(s, _earliest(s.turns)) for s in sessions]
    else:
        raise ValueError("a conversation is a JSON object or a list of turns")
    return _checked(title, sessions)


def replace_said(session: WrittenSession, said: dt.datetime | None) -> WrittenSession:
    return WrittenSession(session.title, said, session.turns)


def from_json_lines(data: str, *, name: str, zone: dt.tzinfo = dt.UTC) -> tuple[str, str]:
    """(title, Markdown transcript) of a JSON-lines conversation, one turn per line."""
    sessions: list[WrittenSession] = []
    key: object = object()
    for number, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise ValueError(f"line {number} is not JSON: {error.msg}") from None
        turn = _turn(row, f"line {number}", zone)
        session = row.get("session") if isinstance(row, Mapping) else None
        if not sessions or session != key:
            key = session
            said = instant(row.get("session_date"), zone) if isinstance(row, Mapping) else None
            label = f"Session {session}" if session is not None else f"Session {len(sessions) + 1}"
            sessions.append(WrittenSession(label, said, []))
        if turn is not None:
            sessions[-1] = WrittenSession(
                sessions[-1].title, sessions[-1].said, [*sessions[-1].turns, turn]
            )
    sessions = [s if s.said else replace_said(s, _earliest(s.turns)) for s in sessions]
    return _checked(name, sessions)


def is_slack_day(value: Any) -> bool:
    """Whether parsed JSON is a Slack export's day of one channel (messages with `ts`)."""
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(row, Mapping) and "ts" in row for row in value)
    )


def slack_users(data: str) -> dict[str, str]:
    """User id -> shown name from a Slack export's users.json (bad rows are skipped)."""
    try:
        rows = json.loads(data)
    except json.JSONDecodeError:
        return {}
    names: dict[str, str] = {}
    for row in rows if isinstance(rows, list) else []:
        if not isinstance(row, Mapping) or not isinstance(row.get("id"), str):
            continue
        profile = row.get("profile")
        if not isinstance(profile, Mapping):
            profile = {}
        shown = _first(profile, ("real_name", "display_name")) or _first(row, ("real_name", "name"))
        if isinstance(shown, str) and shown.strip():
            names[row["id"]] = shown
    return names


def from_slack_day(
    data: str, *, name: str, users: Mapping[str, str], zone: dt.tzinfo = dt.UTC
) -> tuple[str, str]:
    """(title, Markdown transcript) of one Slack export day file."""
    try:
        rows = json.loads(data)
    except json.JSONDecodeError as error:
        raise ValueError(f"not JSON: {error.msg} at line {error.lineno}") from None
    if not is_slack_day(rows):
        raise ValueError("not a Slack export day: a list of messages with `ts`")
    turns = []
    for row in sorted(rows, key=lambda r: Decimal(str(r["ts"])) if _numeric(r["ts"]) else 0):
        if row.get("subtype") not in SLACK_CONTENT_SUBTYPES:
            continue
        profile = row.get("user_profile") if isinstance(row.get("user_profile"), Mapping) else {}
        speaker = (
            _first(profile, ("real_name", "display_name"))
            or users.get(str(row.get("user")))
            or _first(row, ("username", "user", "bot_id"))
        )
        text = _with_attachments(_text(row.get("text")), row)
        if text.strip() and speaker:
            turns.append(WrittenTurn(str(speaker), text, instant(str(row["ts"]), zone)))
    session = WrittenSession(name, _earliest(turns), turns)
    return _checked(name, [session])


def _numeric(value: Any) -> bool:
    try:
        Decimal(str(value))
    except InvalidOperation:
        return False
    return True


def _checked(title: str, sessions: list[WrittenSession]) -> tuple[str, str]:
    if not any(session.turns for session in sessions):
        raise ValueError("the conversation has no turns with text")
    return title, render_transcript(title, [s for s in sessions if s.turns])
