"""How a request body names the scope it acts in.

The API's rule: a request names the scope it acts in with `scope`; a record says which
scope it lives in with `group_id`. Sources and snapshots were created with `group_id`
before the rule, so that name is still read there, deprecated: existing clients keep
working. Their schema asks for exactly one of the two (`vera.schema` reads
`names_one_of`), so a body the schema allows is never refused for naming its scope twice.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

MAX_GROUP_ID = 40


@extend_schema_serializer(deprecate_fields=["group_id"])
class ScopedInputSerializer(serializers.Serializer[None]):
    """Input acting in one scope, named by `scope` or the deprecated `group_id`.

    `validate` leaves one group id under `group_id`, the name the services take, so the
    views and services need not know which name the client used.
    """

    names_one_of = ("scope", "group_id")  # the schema's oneOf (vera.schema)

    scope = serializers.CharField(
        max_length=MAX_GROUP_ID, required=False, help_text="group id of the workspace"
    )
    group_id = serializers.CharField(
        max_length=MAX_GROUP_ID,
        required=False,
        help_text="deprecated: use scope (the same group id)",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        named = {attrs[name] for name in self.names_one_of if name in attrs}
        if not named:
            raise serializers.ValidationError({"scope": ["This field is required."]})
        if len(named) > 1:
            raise serializers.ValidationError(
                {"scope": ["disagrees with group_id (deprecated): send scope alone"]}
            )
        rest = {name: value for name, value in attrs.items() if name not in self.names_one_of}
        return {**rest, "group_id": named.pop()}
