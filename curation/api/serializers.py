"""Serializers of the curation API."""

from __future__ import annotations

import builtins
import datetime as dt
import re
from typing import Any

from django.db.models import QuerySet
from django.urls import reverse
from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from common.api_scope import ScopedInputSerializer
from curation.domain.ontology import (
    DEFAULT_ONTOLOGY,
    ENTITY_SLOT,
    MAX_TEXT,
    MAX_WORDS,
    Ontology,
)
from curation.domain.ontology_records import (
    MAX_DESCRIPTION,
    MAX_NAME,
    MAX_OBJECT_TYPE,
    sense_record,
)
from curation.domain.progress import as_shown
from curation.domain.proposals import (
    MAX_ENTITY_NAME,
    MAX_EVIDENCE,
    MAX_URL,
    NAME_PATTERN,
    OPTIONAL_URL_PATTERN,
)
from curation.domain.records import PREDICATE_PATTERN
from curation.domain.sources import DEFAULT_TIER, ConnectorKind
from curation.domain.tiers import ClaimStatus
from curation.models import Claim, Episode, Evidence, Reprocessing, Source
from curation.usecases import source_run_held


class SourceSerializer(serializers.ModelSerializer[Source]):
    """A source; its secret is never here, only the name of the variable holding it.
    `progress` is its running or last run's; `interrupted` when it was stored as running
    and nobody runs it now (its worker died)."""

    progress = serializers.SerializerMethodField()

    @extend_schema_field(
        {"type": "object", "description": "state (running, finished, failed, stopped, "
         "interrupted), started_at, updated_at, pages, records, new, unchanged, failed"}
    )  # fmt: skip
    def get_progress(self, source: Source) -> dict[str, Any]:
        return as_shown(source.progress, going=lambda: source_run_held(source.pk))

    class Meta:
        model = Source
        fields = ["id", "group_id", "name", "kind", "config", "token_env", "trust_tier",
                  "schedule_seconds", "enabled", "cursor", "last_run_at", "last_run_status",
                  "last_error", "run_requested_at", "progress", "created_at"]  # fmt: skip
        read_only_fields = ["id", "cursor", "last_run_at", "last_run_status", "last_error",
                            "run_requested_at", "progress", "created_at"]  # fmt: skip


class SourceRunSerializer(serializers.Serializer[dict[str, Any]]):
    """A run asked for: whether this call sent it or one asked for earlier still waits,
    and the source (its `progress` and `last_run_*` follow the run)."""

    sent = serializers.BooleanField(
        help_text="true: this call asked for the run; false: a run asked for earlier waits"
    )
    requested_at = serializers.DateTimeField()
    message = serializers.CharField()
    # A field named "source" (popped into the declared fields by DRF's metaclass); mypy
    # sees the class attribute `Field.source`.
    source = SourceSerializer()  # type: ignore[assignment]


class SourceCreateSerializer(ScopedInputSerializer):
    """Input for creating a source in `scope`; its reach is the operator's
    (`manage.py source_reach`)."""

    refuses_unknown_fields = True  # see `validate`; the schema says so (vera.schema)

    name = serializers.CharField(max_length=200)
    kind = serializers.ChoiceField(choices=[kind.value for kind in ConnectorKind])
    config = serializers.DictField(default=dict)  # an object, as the schema says
    token_env = serializers.CharField(max_length=100, required=False, allow_blank=True, default="")
    trust_tier = serializers.IntegerField(
        min_value=1, max_value=4, default=DEFAULT_TIER,
        help_text="1-2 publish at once, 3 waits for review, 4 only proposes (the default).",
    )  # fmt: skip
    schedule_seconds = serializers.IntegerField(min_value=60, required=False, allow_null=True)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        # Refused rather than ignored, so that nobody believes a `reach` they sent was set.
        if unknown := sorted(set(self.initial_data) - set(self.fields)):
            raise serializers.ValidationError(
                f"unknown field(s): {', '.join(unknown)}; a source's reach is set by the operator"
                if "reach" in unknown
                else f"unknown field(s): {', '.join(unknown)}"
            )
        return super().validate(attrs)


class EpisodeSerializer(serializers.ModelSerializer[Episode]):
    class Meta:
        model = Episode
        fields = ["id", "group_id", "source", "external_id", "url", "title", "content_hash",
                  "mime", "size", "fetched_at", "version_from", "location", "status",
                  "failure_reason", "claims_count"]  # fmt: skip


class EvidenceSerializer(serializers.ModelSerializer[Evidence]):
    # The API field `source` shadows Field.source only in the stubs: DRF's metaclass moves
    # declared fields off the class.
    source = serializers.CharField(source="episode.source.name")  # type: ignore[assignment]
    external_id = serializers.CharField(source="episode.external_id")
    url = serializers.CharField(source="episode.url")
    # Where in the fetched artifact the record was read ("line 3" of an export), or "".
    location = serializers.CharField(source="episode.location")

    class Meta:
        model = Evidence
        fields = ["episode", "source", "external_id", "url", "location", "start", "end",
                  "snippet"]  # fmt: skip


# A claim's object: another entity, or a literal value.
CLAIM_OBJECT = {
    "oneOf": [
        {
            "type": "object",
            "properties": {"entity": {"type": "string"}, "entity_id": {"type": "integer"}},
            "required": ["entity", "entity_id"],
        },
        {
            "type": "object",
            "properties": {"literal": {"type": "string", "nullable": True}},
            "required": ["literal"],
        },
    ]
}


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
    @extend_schema_field(CLAIM_OBJECT)
    def get_object(self, claim: Claim) -> dict[str, builtins.object]:
        if claim.object_entity is not None:
            return {
                "entity": claim.object_entity.canonical_name,
                "entity_id": claim.object_entity_id,
            }
        return {"literal": claim.object_literal}


_CLAIM_COLUMNS = ("id", "group_id", "predicate", "fact_text", "confidence", "verification",
                  "tier", "authority", "status", "status_reason", "valid_from", "valid_to",
                  "recorded_at", "superseded_by_id", "version", "source_id",
                  "object_entity_id", "object_literal", "subject__canonical_name",
                  "object_entity__canonical_name")  # fmt: skip
_EVIDENCE_COLUMNS = ("claim_id", "episode_id", "episode__source__name", "episode__external_id",
                     "episode__url", "episode__location", "start", "end",
                     "snippet")  # fmt: skip


def claims_data(claims: QuerySet[Claim]) -> dict[int, dict[str, Any]]:
    """What `ClaimSerializer(many=True)` makes of `claims`, by id, read as plain rows in two
    queries: building and walking a model per claim, evidence, episode and source was most
    of the time of a 100-claim answer. Values are the database's own (str, int, float),
    times as DRF writes them (ISO 8601 in the current time zone, UTC as "Z"); a test
    compares the output with the serializer's, field for field."""
    zone = timezone.get_current_timezone()

    def instant(value: dt.datetime | None) -> str | None:
        if value is None:
            return None
        text = value.astimezone(zone).isoformat()
        return text[:-6] + "Z" if text.endswith("+00:00") else text

    out: dict[int, dict[str, Any]] = {}
    for row in claims.order_by().values(*_CLAIM_COLUMNS):
        out[row["id"]] = {
            "id": row["id"],
            "group_id": row["group_id"],
            "subject": row["subject__canonical_name"],
            "predicate": row["predicate"],
            "object": (
                {"entity": row["object_entity__canonical_name"],
                 "entity_id": row["object_entity_id"]}
                if row["object_entity_id"] is not None
                else {"literal": row["object_literal"]}
            ),
            "fact_text": row["fact_text"],
            "confidence": row["confidence"],
            "verification": row["verification"],
            "tier": row["tier"],
            "authority": row["authority"],
            "status": row["status"],
            "status_reason": row["status_reason"],
            "valid_from": instant(row["valid_from"]),
            "valid_to": instant(row["valid_to"]),
            "recorded_at": instant(row["recorded_at"]),
            "superseded_by": row["superseded_by_id"],
            "version": row["version"],
            "source": row["source_id"],
            "evidence": [],
        }  # fmt: skip
    for row in (
        Evidence.objects.filter(claim_id__in=list(out))
        .order_by("episode_id")
        .values(*_EVIDENCE_COLUMNS)
    ):
        out[row["claim_id"]]["evidence"].append({
            "episode": row["episode_id"],
            "source": row["episode__source__name"],
            "external_id": row["episode__external_id"],
            "url": row["episode__url"],
            "location": row["episode__location"],
            "start": row["start"],
            "end": row["end"],
            "snippet": row["snippet"],
        })  # fmt: skip
    return out


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


class RetractSerializer(serializers.Serializer[None]):
    """Input of a retraction: why (kept with the claims and in the audit log)."""

    reason = serializers.CharField(max_length=500, help_text="why it is withdrawn (required)")


class RetractionSerializer(serializers.Serializer[Any]):
    """What a retraction did."""

    target = serializers.CharField(help_text='what was retracted, e.g. "source 2"')
    retracted = serializers.ListField(
        child=serializers.IntegerField(), help_text="the claims withdrawn"
    )
    restored = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="superseded claims current again (what replaced them was withdrawn)",
    )
    kept = serializers.IntegerField(help_text="claims kept: another document supports them")
    message = serializers.CharField()


class ReinstatementSerializer(serializers.Serializer[Any]):
    """What undoing a retraction did."""

    retracted = serializers.IntegerField(help_text="the retracted claim (it stays retracted)")
    current = serializers.IntegerField(help_text="the claim that holds the value now")
    created = serializers.BooleanField(
        help_text="false when a published claim already held the value (it cites this too)"
    )
    message = serializers.CharField()


# --- the ontology ----------------------------------------------------------------------

# A non-blank entry without NUL: what `sense_refusal` accepts of a label, a word or a
# question form (its bounds are in the schema below; its messages come from the domain).
_ENTRY = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_TEXT,
    "pattern": r"^[^\x00]*[^\s\x00\x1c-\x1f\x85][^\x00]*$",
}


@extend_schema_field({"type": "array", "items": _ENTRY, "maxItems": MAX_WORDS})
class EntriesField(serializers.ListField):
    """Words or question forms: a list of text, bounded by the domain (the schema says how)."""

    child = serializers.CharField(allow_blank=True)


@extend_schema_field(_ENTRY)
class LabelField(serializers.CharField):
    """A predicate's label, bounded by the domain (`sense_refusal`)."""


class PredicateSenseSerializer(serializers.Serializer[Any]):
    """One predicate as people speak of it, in the workspace's ontology."""

    name = serializers.CharField(help_text="the PREDICATE")
    # Shadows Field.label only in the stubs (DRF's metaclass moves declared fields off).
    label = serializers.CharField(  # type: ignore[assignment]
        help_text='how a fact says it ("runs on")'
    )
    description = serializers.CharField()
    words = serializers.ListField(child=serializers.CharField(), help_text="words that ask for it")
    questions = serializers.ListField(
        child=serializers.CharField(), help_text='question forms, X the entity ("where does X run")'
    )
    object_type = serializers.CharField(help_text="the type of its object")
    functional = serializers.BooleanField(help_text="one value at a time")
    default = serializers.BooleanField(help_text="the built-in sense, not the workspace's own")


class OntologySerializer(serializers.Serializer[Any]):
    """A workspace's ontology: the defaults with its own senses in their place."""

    group_id = serializers.CharField()
    version = serializers.IntegerField(help_text="edits so far (0: the defaults, never edited)")
    predicates = PredicateSenseSerializer(many=True, help_text="by name")


def ontology_data(group_id: str, ontology: Ontology) -> dict[str, Any]:
    """What OntologySerializer shows of `ontology`."""
    return {
        "group_id": group_id,
        "version": ontology.version,
        "predicates": [
            {**sense_record(sense), "default": DEFAULT_ONTOLOGY.get(name) == sense}
            for name, sense in sorted(ontology.senses.items())
        ],
    }


class PredicateSenseInputSerializer(serializers.Serializer[None]):
    """Input of a predicate's sense; the name is in the path. Its rules (an UPPER_SNAKE
    name, bounded text, X in every question form) are the domain's, with its messages."""

    refuses_unknown_fields = True  # see `validate`; the schema says so (vera.schema)

    label = LabelField()  # type: ignore[assignment]  # as above
    description = serializers.CharField(allow_blank=True, required=False, default="",
                                        max_length=MAX_DESCRIPTION)  # fmt: skip
    words = EntriesField(required=False, default=list)
    questions = EntriesField(
        required=False, default=list, help_text=f"each names the entity as {ENTITY_SLOT}"
    )
    object_type = serializers.CharField(
        allow_blank=True, required=False, default="", max_length=MAX_OBJECT_TYPE
    )
    functional = serializers.BooleanField(required=False, default=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if unknown := sorted(set(self.initial_data) - set(self.fields)):
            raise serializers.ValidationError(f"unknown field(s): {', '.join(unknown)}")
        return attrs


# --- proposals -------------------------------------------------------------------------

_OPTIONAL_URL = re.compile(OPTIONAL_URL_PATTERN)


@extend_schema_field(
    {
        "type": "string",
        "enum": sorted(DEFAULT_ONTOLOGY.senses),
        "description": "a PREDICATE of the workspace's ontology (GET /api/v1/ontology): the "
        "built-in ones listed here, and any the workspace defined",
    }
)
class ProposedPredicateField(serializers.CharField):
    """A PREDICATE as sent (not trimmed); whether the workspace knows it is the service's."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(trim_whitespace=False, max_length=MAX_NAME, **kwargs)

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        if not PREDICATE_PATTERN.fullmatch(value):
            raise serializers.ValidationError("must be an UPPER_SNAKE_CASE predicate, like RUNS_ON")
        return value


@extend_schema_field(
    {"type": "string", "minLength": 1, "maxLength": MAX_ENTITY_NAME, "pattern": NAME_PATTERN}
)
class ProposedNameField(serializers.RegexField):
    """A subject or object: trimmed, bounded, with a letter or digit in it."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(
            NAME_PATTERN, max_length=MAX_ENTITY_NAME,
            error_messages={"invalid": "must name something: at least one letter or digit"},
            **kwargs,
        )  # fmt: skip


@extend_schema_field({"type": "string", "maxLength": MAX_URL, "pattern": OPTIONAL_URL_PATTERN})
class ProposedUrlField(serializers.Field):  # type: ignore[type-arg]  # DRF's own is untyped
    """Where the evidence comes from: an http(s) URL as sent (not trimmed), or blank.

    Not a CharField: DRF and drf-spectacular would describe "blank or the pattern" as a
    `oneOf` that a blank value matches twice; the pattern here admits blank itself.
    """

    default_error_messages = {
        "invalid": f"must be an http:// or https:// URL of at most {MAX_URL} characters "
        "(or left out)"
    }

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str) or len(data) > MAX_URL or not _OPTIONAL_URL.fullmatch(data):
            self.fail("invalid")
        return str(data)

    def to_representation(self, value: Any) -> str:
        return str(value)


class ProposalInputSerializer(serializers.Serializer[None]):
    """A fact an agent proposes: (subject, PREDICATE, object) and the evidence for it.

    The rules are the domain's (`curation.domain.proposals`); these fields state them in
    the schema, and the service checks them again with the workspace's ontology.
    """

    refuses_unknown_fields = True  # see `validate`; the schema says so (vera.schema)

    subject = ProposedNameField(help_text="what the fact is about")
    predicate = ProposedPredicateField()
    # The API field is called `object`, as the fact's third part; DRF sees only the name.
    object = ProposedNameField(help_text="the value or the thing it relates to")
    evidence = serializers.CharField(
        max_length=MAX_EVIDENCE, help_text="what says the fact is true: a quote or a summary"
    )
    source_url = ProposedUrlField(
        required=False, default="", help_text="where the evidence comes from (http or https)"
    )
    scope = serializers.CharField(
        max_length=40, required=False,
        help_text="the workspace's group id; needed only when the caller has several",
    )  # fmt: skip

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if unknown := sorted(set(self.initial_data) - set(self.fields)):
            raise serializers.ValidationError(f"unknown field(s): {', '.join(unknown)}")
        return attrs


class ProposedSerializer(serializers.Serializer[Any]):
    """A recorded proposal: it waits for a reviewer (or says what became of it)."""

    claim_id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=[status.value for status in ClaimStatus])
    group_id = serializers.CharField(help_text="the workspace it was proposed to")
    created = serializers.BooleanField(help_text="false: the same proposal was made before")
    message = serializers.CharField()


# --- reprocessing ----------------------------------------------------------------------


class ReprocessSerializer(serializers.Serializer[None]):
    """Input of a reprocessing: both optional; by default only the documents an older
    extraction version read are read again."""

    refuses_unknown_fields = True  # see `validate`; the schema says so (vera.schema)

    everything = serializers.BooleanField(
        required=False, default=False,
        help_text="also read the documents today's extractors read already",
    )  # fmt: skip
    reason = serializers.CharField(
        max_length=200, required=False, allow_blank=True, default="",
        help_text="why (kept with the run and in the audit log)",
    )  # fmt: skip

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if unknown := sorted(set(self.initial_data) - set(self.fields)):
            raise serializers.ValidationError(f"unknown field(s): {', '.join(unknown)}")
        return attrs


class ReprocessingSerializer(serializers.ModelSerializer[Reprocessing]):
    """A reprocessing run and how far it got; `url` is where to follow it (needs the
    request in the context)."""

    documents = serializers.SerializerMethodField(help_text="documents read so far, of `total`")
    counts = serializers.SerializerMethodField(
        help_text="what the documents read so far came to: claims kept, new ones by status, "
        "withdrawn, restored, to re-check, citations dropped, documents failed"
    )
    failures = serializers.SerializerMethodField(
        help_text="documents that could not be read again, with why (the first 50)"
    )
    url = serializers.SerializerMethodField(help_text="this run's progress")

    class Meta:
        model = Reprocessing
        fields = ["id", "group_id", "source", "status", "everything", "reason", "requested_by",
                  "version", "total", "documents", "counts", "failures", "error", "started_at",
                  "updated_at", "finished_at", "url"]  # fmt: skip

    def get_documents(self, run: Reprocessing) -> int:
        return int(run.counts.get("documents", 0))

    @extend_schema_field({"type": "object", "additionalProperties": {"type": "integer"}})
    def get_counts(self, run: Reprocessing) -> dict[str, int]:
        return {
            key: value
            for key, value in sorted(run.counts.items())
            if key != "documents" and isinstance(value, int)
        }

    @extend_schema_field(
        {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"external_id": {"type": "string"}, "reason": {"type": "string"}},
                "required": ["external_id", "reason"],
            },
        }
    )
    def get_failures(self, run: Reprocessing) -> list[dict[str, str]]:
        return [
            {"external_id": str(external_id), "reason": str(reason)}
            for external_id, reason in run.counts.get("failures", [])
        ]

    @extend_schema_field({"type": "string", "format": "uri"})
    def get_url(self, run: Reprocessing) -> str:
        path = reverse("api-reprocessing", args=[run.pk])
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request is not None else path
