"""Serializers of the curation API."""

from __future__ import annotations

import builtins
from typing import Any

from rest_framework import serializers

from curation.domain.sources import ConnectorKind
from curation.models import Claim, Episode, Evidence, Source


class SourceSerializer(serializers.ModelSerializer[Source]):
    """A source; its secret is never here, only the name of the variable holding it."""

    class Meta:
        model = Source
        fields = ["id", "group_id", "name", "kind", "config", "token_env", "trust_tier",
                  "schedule_seconds", "enabled", "cursor", "last_run_at", "last_run_status",
                  "last_error", "created_at"]  # fmt: skip
        read_only_fields = ["id", "cursor", "last_run_at", "last_run_status", "last_error",
                            "created_at"]  # fmt: skip


class SourceCreateSerializer(serializers.Serializer[None]):
    """Input for creating a source; its reach is the operator's (`manage.py source_reach`)."""

    group_id = serializers.CharField(max_length=40)
    name = serializers.CharField(max_length=200)
    kind = serializers.ChoiceField(choices=[kind.value for kind in ConnectorKind])
    config = serializers.JSONField(default=dict)
    token_env = serializers.CharField(max_length=100, required=False, allow_blank=True, default="")
    trust_tier = serializers.IntegerField(min_value=1, max_value=4)
    schedule_seconds = serializers.IntegerField(min_value=60, required=False, allow_null=True)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        # Refused rather than ignored, so that nobody believes a `reach` they sent was set.
        if unknown := sorted(set(self.initial_data) - set(self.fields)):
            raise serializers.ValidationError(
                f"unknown field(s): {', '.join(unknown)}; a source's reach is set by the operator"
                if "reach" in unknown
                else f"unknown field(s): {', '.join(unknown)}"
            )
        return attrs


class EpisodeSerializer(serializers.ModelSerializer[Episode]):
    class Meta:
        model = Episode
        fields = ["id", "group_id", "source", "external_id", "url", "title", "content_hash",
                  "mime", "size", "fetched_at", "status", "failure_reason",
                  "claims_count"]  # fmt: skip


class EvidenceSerializer(serializers.ModelSerializer[Evidence]):
    # The API field `source` shadows Field.source only in the stubs: DRF's metaclass moves
    # declared fields off the class.
    source = serializers.CharField(source="episode.source.name")  # type: ignore[assignment]
    external_id = serializers.CharField(source="episode.external_id")
    url = serializers.CharField(source="episode.url")

    class Meta:
        model = Evidence
        fields = ["episode", "source", "external_id", "url", "start", "end", "snippet"]


class ClaimSerializer(serializers.ModelSerializer[Claim]):
    subject = serializers.CharField(source="subject.canonical_name")
    object = serializers.SerializerMethodField()
    evidence = EvidenceSerializer(many=True, read_only=True)

    class Meta:
        model = Claim
        fields = ["id", "group_id", "subject", "predicate", "object", "fact_text", "confidence",
                  "verification", "tier", "authority", "status", "status_reason", "valid_from",
                  "valid_to", "recorded_at", "superseded_by", "version", "source",
                  "evidence"]  # fmt: skip

    # builtins.object: in this class body `object` is the field above.
    def get_object(self, claim: Claim) -> dict[str, builtins.object]:
        if claim.object_entity is not None:
            return {
                "entity": claim.object_entity.canonical_name,
                "entity_id": claim.object_entity_id,
            }
        return {"literal": claim.object_literal}


class EntityRefSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField(source="pk")
    name = serializers.CharField(source="canonical_name")
    type = serializers.CharField(source="entity_type")


class EntitySerializer(serializers.Serializer[Any]):
    """An entity (the survivor of any merges): its names, its facts now and before."""

    id = serializers.IntegerField(source="entity.pk")
    group_id = serializers.CharField(source="entity.group_id")
    name = serializers.CharField(source="entity.canonical_name")
    type = serializers.CharField(source="entity.entity_type")
    aliases = serializers.ListField(child=serializers.CharField())
    merged = EntityRefSerializer(many=True, help_text="entities merged into this one")
    current = ClaimSerializer(many=True, help_text="facts valid now, about it or pointing at it")
    past = ClaimSerializer(many=True, help_text="superseded or retracted facts, newest first")


class NeighbourSerializer(serializers.Serializer[Any]):
    """A neighbour and the claims on the path to it, from the entity outwards."""

    entity_id = serializers.IntegerField(allow_null=True, help_text="null for a literal value")
    name = serializers.CharField()
    type = serializers.CharField(source="kind")
    hops = serializers.IntegerField(min_value=1, max_value=3)
    claim_ids = serializers.ListField(
        child=serializers.IntegerField(), help_text="the path's claims, in `claims`"
    )


class RelatedSerializer(serializers.Serializer[Any]):
    """An entity's neighbourhood: each neighbour with its path, and each claim on any path
    once, with its citations."""

    entity = EntityRefSerializer()
    neighbours = NeighbourSerializer(many=True)
    claims = ClaimSerializer(many=True)
