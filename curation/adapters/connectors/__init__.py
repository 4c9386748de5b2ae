"""Connectors to the sources VERA curates, and the factory that builds one from its config."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from curation.adapters.connectors.cmdb import CmdbExportConnector
from curation.adapters.connectors.confluence import ConfluenceConnector
from curation.adapters.connectors.jira import JiraConnector
from curation.adapters.connectors.markdown import MarkdownFolderConnector
from curation.adapters.connectors.slack import SlackConnector
from curation.domain.source_policy import SourcePolicy, source_refusal
from curation.domain.sources import ConnectorKind
from curation.ports import Connector

__all__ = [
    "CmdbExportConnector",
    "ConfluenceConnector",
    "JiraConnector",
    "MarkdownFolderConnector",
    "SlackConnector",
    "build_connector",
]

Config = Mapping[str, Any]


def _zone(name: str) -> dt.tzinfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {name!r}") from None


def _options(config: Config, *names: str) -> dict[str, Any]:
    return {name: config[name] for name in names if name in config}


def _markdown(config: Config, _: str, policy: SourcePolicy) -> Connector:
    options = _options(config, "max_bytes", "page_size", "base_url")
    if "patterns" in config:
        options["patterns"] = tuple(config["patterns"])
    return MarkdownFolderConnector(Path(config["root"]), policy=policy, **options)


def _cmdb(config: Config, _: str, policy: SourcePolicy) -> Connector:
    options = _options(config, "id_field", "page_size")
    return CmdbExportConnector(Path(config["path"]), policy=policy, **options)


def _confluence(config: Config, token: str, policy: SourcePolicy) -> Connector:
    options = _options(config, "space", "page_size")
    if "timezone" in config:
        options["query_tz"] = _zone(config["timezone"])
    return ConfluenceConnector(config["base_url"], token=token, policy=policy, **options)


def _jira(config: Config, token: str, policy: SourcePolicy) -> Connector:
    options = _options(config, "jql", "page_size")
    if "timezone" in config:
        options["query_tz"] = _zone(config["timezone"])
    return JiraConnector(config["base_url"], token=token, policy=policy, **options)


def _slack(config: Config, token: str, policy: SourcePolicy) -> Connector:
    options = _options(config, "base_url", "page_size")
    return SlackConnector(token=token, channel=config["channel"], policy=policy, **options)


# Structured sources may name the fields that say from when and until when a record's
# facts held (read by the structured extractor, not by the connector).
VALIDITY_FIELDS: Mapping[str, type] = {"valid_from_field": str, "valid_to_field": str}


@dataclass(frozen=True)
class _Kind:
    """How to build one kind of connector and which config keys it takes (key -> type)."""

    build: Callable[[Config, str, SourcePolicy], Connector]
    required: Mapping[str, type | tuple[type, ...]]
    optional: Mapping[str, type | tuple[type, ...]]
    needs_token: bool


_KINDS: dict[ConnectorKind, _Kind] = {
    ConnectorKind.MARKDOWN: _Kind(
        _markdown,
        {"root": (str, Path)},
        {"patterns": (list, tuple), "max_bytes": int, "page_size": int, "base_url": str},
        needs_token=False,
    ),
    ConnectorKind.CMDB: _Kind(
        _cmdb,
        {"path": (str, Path)},
        {"id_field": str, "page_size": int, **VALIDITY_FIELDS},
        needs_token=False,
    ),
    ConnectorKind.CONFLUENCE: _Kind(
        _confluence,
        {"base_url": str},
        {"space": str, "page_size": int, "timezone": str},
        needs_token=True,
    ),
    ConnectorKind.JIRA: _Kind(
        _jira,
        {"base_url": str},
        {"jql": str, "page_size": int, "timezone": str, **VALIDITY_FIELDS},
        needs_token=True,
    ),
    ConnectorKind.SLACK: _Kind(
        _slack, {"channel": str}, {"base_url": str, "page_size": int}, needs_token=True
    ),
}


def _checked(kind: str, spec: _Kind, config: Config) -> None:
    """ValueError naming every missing, unknown or mistyped key of a connector config."""
    missing = [key for key in spec.required if config.get(key) in (None, "")]
    if missing:
        raise ValueError(f"the {kind} connector needs config key(s): {', '.join(missing)}")
    allowed = {**spec.required, **spec.optional}
    unknown = sorted(set(config) - set(allowed))
    if unknown:
        expected = ", ".join(sorted(allowed))
        raise ValueError(
            f"unknown {kind} config key(s): {', '.join(unknown)} (expected: {expected})"
        )
    for key, value in config.items():
        # bool is an int to isinstance; a page size of True is a mistake, not 1.
        if isinstance(value, bool) or not isinstance(value, allowed[key]):
            raise ValueError(f"the {kind} config key {key!r} has the wrong type: {value!r}")


def build_connector(
    kind: str, config: Config, *, secret: str | None, policy: SourcePolicy
) -> Connector:
    """The connector of `kind` configured by `config`, confined to what `policy` allows.

    `secret` is the API token if the kind needs one. The policy is checked here, before
    anything is reached, and again by the connector at every connection or file read.
    """
    spec = _KINDS.get(ConnectorKind(kind)) if kind in ConnectorKind else None
    if spec is None:
        raise ValueError(f"unknown connector kind {kind!r}; expected one of: {', '.join(_KINDS)}")
    _checked(kind, spec, config)
    if reason := source_refusal(kind, config, policy, resolve=os.path.realpath):
        raise ValueError(reason)
    if spec.needs_token and not secret:
        raise ValueError(f"the {kind} connector needs a token (secret) and none was given")
    return spec.build(config, secret or "", policy)
