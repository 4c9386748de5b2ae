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
