"""Connectors to the sources VERA curates, and the factory that builds one from its config."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from curation.adapters.connectors.cmdb import CmdbExportConnector
from curation.adapters.connectors.confluence import ConfluenceConnector
from curation.adapters.connectors.conversation import ConversationFolderConnector
from curation.adapters.connectors.jira import JiraConnector
from curation.adapters.connectors.markdown import MarkdownFolderConnector
from curation.adapters.connectors.slack import SlackConnector
from curation.domain.connector_config import config_refusal, kind_rules, time_zone
from curation.domain.source_policy import SourcePolicy, source_refusal
from curation.domain.sources import ConnectorKind
from curation.ports import Connector

__all__ = [
    "CmdbExportConnector",
    "ConfluenceConnector",
    "ConversationFolderConnector",
    "JiraConnector",
    "MarkdownFolderConnector",
    "SlackConnector",
    "build_connector",
]

Config = Mapping[str, Any]


def _options(config: Config, *names: str) -> dict[str, Any]:
    return {name: config[name] for name in names if name in config}


def _markdown(config: Config, _: str, policy: SourcePolicy) -> Connector:
    options = _options(config, "max_bytes", "page_size", "base_url")
    if "patterns" in config:
        options["patterns"] = tuple(config["patterns"])
    return MarkdownFolderConnector(Path(config["root"]), policy=policy, **options)


def _conversation(config: Config, _: str, policy: SourcePolicy) -> Connector:
    options = _options(config, "max_bytes", "page_size", "base_url")
    if "patterns" in config:
        options["patterns"] = tuple(config["patterns"])
    zone = time_zone(config.get("timezone") or "UTC")
    return ConversationFolderConnector(Path(config["root"]), policy=policy, zone=zone, **options)


def _cmdb(config: Config, _: str, policy: SourcePolicy) -> Connector:
    # The valid-from field orders an item's rows into its history (the extractor dates them).
    options = _options(config, "id_field", "page_size", "valid_from_field")
    return CmdbExportConnector(Path(config["path"]), policy=policy, **options)


def _confluence(config: Config, token: str, policy: SourcePolicy) -> Connector:
    options = _options(config, "space", "page_size")
    if "timezone" in config:
        options["query_tz"] = time_zone(config["timezone"])
    return ConfluenceConnector(config["base_url"], token=token, policy=policy, **options)


def _jira(config: Config, token: str, policy: SourcePolicy) -> Connector:
    options = _options(config, "jql", "page_size")
    if "timezone" in config:
        options["query_tz"] = time_zone(config["timezone"])
    return JiraConnector(config["base_url"], token=token, policy=policy, **options)


def _slack(config: Config, token: str, policy: SourcePolicy) -> Connector:
    options = _options(config, "base_url", "page_size")
    return SlackConnector(token=token, channel=config["channel"], policy=policy, **options)


# How to build each kind; which keys it takes and what they may hold is the domain's
# (`connector_config`), the same rules a source is checked with when it is saved.
CONNECTORS: Mapping[ConnectorKind, Callable[[Config, str, SourcePolicy], Connector]] = {
    ConnectorKind.MARKDOWN: _markdown,
    ConnectorKind.CMDB: _cmdb,
    ConnectorKind.CONFLUENCE: _confluence,
    ConnectorKind.JIRA: _jira,
    ConnectorKind.SLACK: _slack,
    ConnectorKind.CONVERSATION: _conversation,
}


def build_connector(
    kind: str, config: Config, *, secret: str | None, policy: SourcePolicy
) -> Connector:
    """The connector of `kind` configured by `config`, confined to what `policy` allows.

    `secret` is the API token if the kind needs one. The policy is checked here, before
    anything is reached, and again by the connector at every connection or file read.
    """
    rules = kind_rules(kind)
    build = CONNECTORS.get(ConnectorKind(kind)) if kind in ConnectorKind else None
    if rules is None or build is None:
        raise ValueError(
            f"unknown connector kind {kind!r}; expected one of: {', '.join(CONNECTORS)}"
        )
    if reason := config_refusal(kind, config):
        raise ValueError(reason)
    if reason := source_refusal(kind, config, policy, resolve=os.path.realpath):
        raise ValueError(reason)
    if rules.needs_token and not secret:
        raise ValueError(f"the {kind} connector needs a token (secret) and none was given")
    return build(config, secret or "", policy)
