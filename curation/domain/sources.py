"""The kinds of source VERA can connect to: the one list the model, the API and the factory use."""

from __future__ import annotations

import enum


class ConnectorKind(enum.StrEnum):
    """A connector VERA can run; `Source.kind` holds one of these values.

    Everything that lists kinds derives from this enum (the model's choices and its check
    constraint, the API's choices, the connector factory, what each kind may reach), so a
    new connector is added here once and every other place either follows or fails.
    """

    MARKDOWN = "markdown"
    CMDB = "cmdb"
    CONFLUENCE = "confluence"
    JIRA = "jira"
    SLACK = "slack"
    CONVERSATION = "conversation"


# A source created without a tier is the least trusted: its claims are proposals until a
# reviewer accepts them, so nothing publishes because someone left the tier out. Chat
# (what people said, not what is checked) stays there unless its admin says otherwise.
DEFAULT_TIER = 4


# Not a connector: the source VERA keeps in each workspace for the facts agents propose
# (tier 4, never scheduled, never run). Only `claim_propose` creates one; the source
# services refuse it as a connector kind, so nobody configures one by hand.
AGENT_KIND = "agent"

# What `Source.kind` may hold: every connector, and the agents' source.
SOURCE_KINDS: tuple[str, ...] = (*(kind.value for kind in ConnectorKind), AGENT_KIND)
