"""What a source's config may hold, per connector kind: one set of rules for save and run.

A source is checked when it is saved (`source_validate`) and again when the worker
builds its connector (`build_connector`); both ask `config_refusal`, so a config the
API accepts is one the run can use, and a bad one is refused at save with a message
naming the key instead of failing every scheduled run. What a source may *reach* (hosts,
folders, secrets) is the other half of the check, in `source_policy`.
"""

from __future__ import annotations

import enum
import functools
import zoneinfo
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from curation.domain.records import PREDICATE_PATTERN
from curation.domain.sources import ConnectorKind

# Largest file the Markdown connector reads. It reads a file whole into the worker's
# memory before extraction; the default is 1 MB, and 50 MiB is far above any real page
# while still bounding what one file can cost a worker.
MAX_BYTES_CAP = 50 * 1024 * 1024

# Largest page each kind asks for. Local kinds (a folder, an export already in memory)
# batch work in our own process: 1000 covers their defaults (500, 1000). HTTP kinds stop
# at what the upstream documents, so a page size is never a promise the site ignores:
# Confluence Cloud's search `limit` and Jira Cloud's `maxResults` are capped at 100 (the
# connectors follow next links / advance by what came back, so a smaller answer is
# fine), and Slack's conversations.history documents a `limit` of at most 999.
PAGE_SIZE_CAPS: Mapping[ConnectorKind, int] = {
    ConnectorKind.MARKDOWN: 1000,
    ConnectorKind.CMDB: 1000,
    ConnectorKind.CONFLUENCE: 100,
    ConnectorKind.JIRA: 100,
    ConnectorKind.SLACK: 999,
    ConnectorKind.CONVERSATION: 1000,
}

# A name in the tz database that is not a zone of any site: the server's own setting.
_NOT_ZONES = frozenset({"localtime"})
_SHOWN = 60  # characters of a refused value repeated in a message
_UNKNOWN_SHOWN = 5  # unknown keys named in a message
MAX_PREDICATE_CHARS = 100  # Claim.predicate's length
MAX_MAPPED_COLUMNS = 100  # columns a CMDB source may map onto predicates (`mapping`)

Check = Callable[[Any], str]


def _shown(value: Any) -> str:
    """A refused value as a message repeats it: its repr, cut short."""
    text = repr(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


@functools.cache
def _zone_names() -> frozenset[str]:
    # available_timezones() walks the tz database on every call; it changes with tzdata only.
    return frozenset(zoneinfo.available_timezones()) - _NOT_ZONES


def time_zone(name: str) -> zoneinfo.ZoneInfo:
    """The IANA zone called `name` ("Europe/Paris", "UTC"); ValueError if there is none."""
    if name not in _zone_names():
        raise ValueError(f"unknown time zone {_shown(name)}")
    return zoneinfo.ZoneInfo(name)


# --- value rules: each answers "" or what is wrong, after the key's name --------------------


def _fine(_: Any) -> str:
    return ""


def _text(value: Any) -> str:
    return "" if value.strip() else "must not be blank"


def _page_size(kind: ConnectorKind) -> Check:
    cap = PAGE_SIZE_CAPS[kind]
    return lambda value: _between(value, 1, cap)


def _max_bytes(value: Any) -> str:
    return _between(value, 1, MAX_BYTES_CAP, unit=f" bytes ({MAX_BYTES_CAP // 2**20} MiB)")


def _between(value: int, low: int, high: int, *, unit: str = "") -> str:
    if low <= value <= high:
        return ""
    return f"must be at least {low} and at most {high}{unit}, not {value}"


def _zone(value: Any) -> str:
    try:
        time_zone(value)
    except ValueError:
        return f"names an unknown time zone {_shown(value)}: use an IANA name like Europe/Paris"
    return ""


def _patterns(value: Any) -> str:
    if not value:
        return "must list at least one glob pattern (or be left out for the defaults)"
    for pattern in value:
        if not isinstance(pattern, str) or not pattern.strip() or "\0" in pattern:
            return f"must hold non-empty strings, not {_shown(pattern)}"
        if pattern.startswith("/"):
            return f"holds {_shown(pattern)}: patterns are relative to the folder, not absolute"
        if ".." in pattern.split("/"):
            return f"holds {_shown(pattern)}: a pattern may not climb out of the folder (..)"
    return ""


def _mapping(value: Any) -> str:
    if len(value) > MAX_MAPPED_COLUMNS:
        return f"maps {len(value)} columns: at most {MAX_MAPPED_COLUMNS}"
    for column, predicate in value.items():
        if not isinstance(column, str) or not column.strip():
            return f"maps a blank column name {_shown(column)}"
        if not isinstance(predicate, str):
            return f"maps {_shown(column)} to {_shown(predicate)}: a predicate is a string"
        if predicate and not (
            len(predicate) <= MAX_PREDICATE_CHARS and PREDICATE_PATTERN.match(predicate)
        ):
            return (
                f"maps {_shown(column)} to {_shown(predicate)}: a predicate is UPPER_SNAKE "
                f'(like RUNS_ON, at most {MAX_PREDICATE_CHARS} characters), or "" to drop '
                "the column"
            )
    return ""


def _jql(value: Any) -> str:
    if "order by" in value.lower():
        return "must not have ORDER BY: the connector sets the order"
    return ""


# --- keys per kind --------------------------------------------------------------------------


@dataclass(frozen=True)
class Key:
    """What one config key holds: its types (a bool is never an int) and a value rule."""

    types: tuple[type, ...]
    what: str  # the types in words, for a message
    check: Check = _fine


TEXT = Key((str,), "a string", _text)
ANY_TEXT = Key((str,), "a string")  # "" allowed: it means "none" to the connector
PATH = Key((str, PurePath), "a path")
ZONE = Key((str,), "a string", _zone)
# Structured sources may name the fields that say from when and until when a record's
# facts held (read by the structured extractor, not by the connector).
VALIDITY_FIELDS: Mapping[str, Key] = {"valid_from_field": ANY_TEXT, "valid_to_field": ANY_TEXT}


def _page(kind: ConnectorKind) -> Key:
    return Key((int,), "an integer", _page_size(kind))


class Extraction(enum.StrEnum):
    """How a kind's records are read into claims: each kind declares its own, in order
    (the composition root builds one extractor per entry)."""

    STRUCTURED = "structured"  # a record's fields (columns, issue fields) -> claims
    CONVERSATION = "conversation"  # one dated, attributed statement per turn
    RULES = "rules"  # prose by the rule-based extractor
    LLM = "llm"  # prose by a chat model, only when one is configured (else left out)


@dataclass(frozen=True)
class KindRules:
    """The config keys one kind of connector takes, whether it needs a token, and how
    its records are extracted (at least one extractor that needs no model: a source
    must give claims when no LLM is configured)."""

    required: Mapping[str, Key]
    optional: Mapping[str, Key]
    needs_token: bool
    extraction: tuple[Extraction, ...]

    @property
    def keys(self) -> dict[str, Key]:
        return {**self.required, **self.optional}


KINDS: Mapping[ConnectorKind, KindRules] = {
    ConnectorKind.MARKDOWN: KindRules(
        {"root": PATH},
        {
            "patterns": Key((list, tuple), "a list of glob patterns", _patterns),
            "max_bytes": Key((int,), "an integer", _max_bytes),
            "page_size": _page(ConnectorKind.MARKDOWN),
            "base_url": ANY_TEXT,  # where the files are published, for links; "" is none
        },
        needs_token=False,
        extraction=(Extraction.RULES, Extraction.LLM),
    ),
    ConnectorKind.CMDB: KindRules(
        {"path": PATH},
        {
            "id_field": TEXT,
            "page_size": _page(ConnectorKind.CMDB),
            # column -> PREDICATE over the default mapping; "" drops a column
            "mapping": Key((dict,), "an object of column -> PREDICATE", _mapping),
            **VALIDITY_FIELDS,
        },
        needs_token=False,
        extraction=(Extraction.STRUCTURED,),
    ),
    ConnectorKind.CONFLUENCE: KindRules(
        {"base_url": TEXT},
        {"space": ANY_TEXT, "page_size": _page(ConnectorKind.CONFLUENCE), "timezone": ZONE},
        needs_token=True,
        extraction=(Extraction.RULES, Extraction.LLM),
    ),
    ConnectorKind.JIRA: KindRules(
        {"base_url": TEXT},
        {
            "jql": Key((str,), "a string", _jql),
            "page_size": _page(ConnectorKind.JIRA),
            "timezone": ZONE,
            **VALIDITY_FIELDS,
        },
        needs_token=True,
        extraction=(Extraction.STRUCTURED, Extraction.RULES, Extraction.LLM),
    ),
    ConnectorKind.SLACK: KindRules(
        {"channel": TEXT},
        # "" would not mean the default: the connector would post to a relative URL.
        {"base_url": TEXT, "page_size": _page(ConnectorKind.SLACK)},
        needs_token=True,
        extraction=(Extraction.RULES, Extraction.LLM),
    ),
    # A folder of transcripts (JSON, JSON lines, Slack export days, Markdown); naive
    # times in them are read in `timezone` (UTC when left out).
    ConnectorKind.CONVERSATION: KindRules(
        {"root": PATH},
        {
            "patterns": Key((list, tuple), "a list of glob patterns", _patterns),
            "max_bytes": Key((int,), "an integer", _max_bytes),
            "page_size": _page(ConnectorKind.CONVERSATION),
            "base_url": ANY_TEXT,
            "timezone": ZONE,
        },
        needs_token=False,
        extraction=(Extraction.CONVERSATION, Extraction.LLM),
    ),
}


def declaration_refusals(kinds: Mapping[ConnectorKind, KindRules]) -> list[str]:
    """What is wrong with the kinds' declarations ([] when nothing): a kind VERA lists
    with no rules, or whose extraction is empty or needs a model for every record."""
    refusals = []
    for kind in ConnectorKind:
        rules = kinds.get(kind)
        if rules is None:
            refusals.append(f"connector kind {kind.value!r} declares no rules and no extraction")
        elif not set(rules.extraction) - {Extraction.LLM}:
            refusals.append(
                f"connector kind {kind.value!r} declares no extractor that runs without a "
                f"model (extraction: {', '.join(rules.extraction) or 'none'})"
            )
    return refusals


def kind_rules(kind: str) -> KindRules | None:
    """The rules of `kind`, or None if it is not a kind VERA knows (or has no rules for)."""
    return KINDS.get(ConnectorKind(kind)) if kind in ConnectorKind else None


def config_refusal(kind: str, config: Mapping[str, Any]) -> str:
    """Why `config` cannot configure a `kind` connector ("" when it can): the first missing,
    unknown, mistyped or out-of-range key, named."""
    rules = kind_rules(kind)
    if rules is None:
        return f"unknown connector kind {_shown(kind)}, or one without config rules"
    if not isinstance(config, Mapping):
        return "config must be a JSON object"
    missing = [key for key in rules.required if config.get(key) in (None, "")]
    if missing:
        return f"the {kind} connector needs config key(s): {', '.join(missing)}"
    keys = rules.keys
    unknown = sorted(str(key)[:_SHOWN] for key in set(config) - set(keys))
    if unknown:
        named = ", ".join(unknown[:_UNKNOWN_SHOWN]) + (", ..." if unknown[_UNKNOWN_SHOWN:] else "")
        return f"unknown {kind} config key(s): {named} (expected: {', '.join(sorted(keys))})"
    for name, value in config.items():
        key = keys[name]
        # bool is an int to isinstance; a page size of True is a mistake, not 1.
        if isinstance(value, bool) or not isinstance(value, key.types):
            return (
                f"the {kind} config key {name!r} has the wrong type: {_shown(value)} "
                f"(expected {key.what})"
            )
        if reason := key.check(value):
            return f"the {kind} config's {name} {reason}"
    return ""
