"""The search API's documented shapes (OpenAPI), read from `retrieval.selectors`' objects."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from common.api_scope import ScopedInputSerializer
from retrieval.domain.ranking import SIGNALS
from retrieval.domain.understanding import Understanding
from retrieval.models import Snapshot, WordSuggestion
from retrieval.selectors import Citation, CitedHit, CitedResult, WeightsUsed


class CitationSerializer(serializers.Serializer[Citation]):
    """Where a hit's fact was read: source, episode and the evidence span."""

    # The API field `source` shadows Field.source only in the stubs: DRF's metaclass moves
    # declared fields off the class.
    source = serializers.CharField()  # type: ignore[assignment]
    episode = serializers.CharField(help_text="the episode's external id")
    url = serializers.CharField(allow_blank=True)
    span = serializers.ListField(
        child=serializers.IntegerField(), allow_null=True, help_text="[start, end) characters"
    )
    snippet = serializers.CharField(allow_blank=True)


class SignalsSerializer(serializers.Serializer[dict[str, float]]):
    """The six stage-2 signals the hit was ranked by, each in [0, 1], and `understood`: 1
    when the hit is a claim about an entity the question names, of the relation it asks
    for (the third stage-1 list), else 0."""

    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        fields: dict[str, serializers.Field[Any, Any, Any, Any]] = {
            name: serializers.FloatField(min_value=0, max_value=1) for name in SIGNALS
        }
        fields["understood"] = serializers.FloatField(min_value=0, max_value=1, default=0.0)
        return fields


class SearchHitSerializer(serializers.Serializer[CitedHit]):
    """One ranked, cited hit; `id` is what POST /api/v1/feedback votes on."""

    id = serializers.IntegerField(
        source="hit_id", allow_null=True,
        help_text="what a vote names; null in a snapshot's hits (votes are for live hits)",
    )  # fmt: skip
    claim_id = serializers.IntegerField()
    fact = serializers.CharField()
    subject = serializers.CharField()
    predicate = serializers.CharField()
    object = serializers.CharField(source="object_text")
    subject_id = serializers.IntegerField(help_text="the entity: GET /api/v1/entities/{id}")
    object_id = serializers.IntegerField(
        allow_null=True, help_text="the object's entity, null for a literal value"
    )
    score = serializers.FloatField()
    signals = SignalsSerializer()
    rerank = serializers.FloatField(allow_null=True, help_text="stage-3 score, if it ran")
    status = serializers.ChoiceField(choices=["published", "superseded", "retracted"])
    valid_from = serializers.DateTimeField()
    valid_to = serializers.DateTimeField(allow_null=True)
    citations = CitationSerializer(many=True)
    weight_version = serializers.IntegerField(
        help_text="version of the weight set that blended this hit (0: the built-in default)"
    )
    scope = serializers.CharField(
        source="group_id", help_text="the same as group_id (kept for existing clients)"
    )
    group_id = serializers.CharField(help_text="group id of the claim's scope")
    also_claim_ids = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="the same fact in other scopes the caller reads, merged into this hit "
        "(their citations are among its citations)",
    )


class WeightsUsedSerializer(serializers.Serializer[WeightsUsed]):
    """The weight set a workspace's hits were blended with."""

    group_id = serializers.CharField()
    version = serializers.IntegerField(help_text="0: the built-in default")
    weight_set_id = serializers.IntegerField(allow_null=True)


class UnderstoodSerializer(serializers.Serializer[Understanding]):
    """What the search read from the question before ranking."""

    entities = serializers.ListField(
        child=serializers.CharField(), help_text="the entities the question names"
    )
    mentions = serializers.ListField(
        child=serializers.CharField(), help_text="the question's words that named them"
    )
    predicates = serializers.ListField(
        child=serializers.CharField(), help_text="the relation the question asks for"
    )
    inverse = serializers.BooleanField(
        help_text="the question names the relation's object and asks for its subjects "
        '("who reports to X")'
    )
    ambiguous = serializers.ListField(
        child=serializers.CharField(),
        help_text="mentions that name more than one entity; each one's facts were considered",
    )
    answer = serializers.CharField(
        help_text='the kind of answer asked for: "date", "amount", "agent", "place", or empty'
    )
    as_of = serializers.DateTimeField(
        allow_null=True,
        help_text="a time the question states (used when none was given, unless "
        "time_fallback says why not)",
    )
    time_text = serializers.CharField(help_text="the words that stated it")
    time_fallback = serializers.CharField(
        help_text="why the stated time did not narrow the search (nothing was valid then: "
        "the question was searched without it), or empty"
    )
    scores = serializers.DictField(
        child=serializers.FloatField(), help_text="the best relations' scores"
    )
    values = serializers.DictField(
        child=serializers.FloatField(),
        help_text="what the values the question names are objects of, by predicate share",
    )
    weight = serializers.FloatField(
        allow_null=True,
        help_text="the understood list's weight in the fusion: the workspace's active weight "
        "set's (learnt from votes), or VERA_SEARCH__FUSION_WEIGHTS; null when no list",
    )


class SearchResultSerializer(serializers.Serializer[CitedResult]):
    """A search's hits, best first."""

    query_id = serializers.UUIDField()
    count = serializers.IntegerField()
    stage3 = serializers.ChoiceField(choices=["off", "applied", "unavailable"])
    degraded = serializers.ListField(
        child=serializers.ChoiceField(choices=["vector"]),
        help_text="stage-1 halves that could not run (the query embedding failed)",
    )
    hits = SearchHitSerializer(many=True)
    weights = WeightsUsedSerializer(many=True, help_text="per workspace with a hit")
    understood = UnderstoodSerializer()


class StrictBooleanField(serializers.BooleanField):
    """A boolean only the JSON literals true and false can set: DRF's BooleanField also
    reads "yes", "true", "on" and 1 as true, too loose for a flag that destroys data."""

    default_error_messages = {"invalid": "must be the JSON literal true or false"}

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):  # not `in {True}`: 1 == True, and 0.0 == False
            self.fail("invalid")
        return data


class EraseSerializer(serializers.Serializer[None]):
    """Input of an erasure: why, and the confirmation that it cannot be undone."""

    reason = serializers.CharField(max_length=500, help_text="why (kept in the tombstone)")
    confirm = StrictBooleanField(
        default=False,
        help_text="true to proceed; without it the answer (400) says what would be destroyed",
    )


class TombstoneSerializer(serializers.Serializer[Any]):
    """What remains of an erased source or episode: no content."""

    id = serializers.IntegerField()
    group_id = serializers.CharField()
    kind = serializers.CharField(help_text="source | episode")
    target_id = serializers.IntegerField()
    actor = serializers.CharField()
    reason = serializers.CharField()
    counts = serializers.DictField(help_text="what was destroyed, by kind")
    status = serializers.CharField(help_text="cleaning | complete | retrying | failed")
    attempts = serializers.IntegerField()
    last_error = serializers.CharField()
    created_at = serializers.DateTimeField()
    completed_at = serializers.DateTimeField(allow_null=True)


class SnapshotCreateSerializer(ScopedInputSerializer):
    """Input of a snapshot: the workspace (`scope`), a name, and why (optional)."""

    name = serializers.CharField(max_length=200)
    reason = serializers.CharField(max_length=500, required=False, default="", allow_blank=True)


class WordSuggestionSerializer(serializers.ModelSerializer[WordSuggestion]):
    """A question word learnt from votes for a predicate, and what an admin decided."""

    scope = serializers.CharField(source="group_id", help_text="the workspace's group id")
    decided_by = serializers.CharField(
        source="decided_by.username", default=None, allow_null=True,
        help_text="the admin who accepted or dismissed it",
    )  # fmt: skip

    class Meta:
        model = WordSuggestion
        fields = ["id", "scope", "predicate", "word", "support", "against", "status",
                  "decided_by", "decided_at", "created_at"]  # fmt: skip
        extra_kwargs = {
            "support": {"help_text": "questions that used the word and found a fact of the "
                        "predicate helpful"},
            "against": {"help_text": "questions that used it and voted such a fact down"},
        }  # fmt: skip


class SnapshotSerializer(serializers.ModelSerializer[Snapshot]):
    """A knowledge snapshot: what it pins, its seal and what happened to it since."""

    class Meta:
        model = Snapshot
        fields = [
            "id", "group_id", "name", "reason", "created_by", "created_at", "status",
            "taken_at", "sealed_at", "checksum", "pins", "ontology_version", "assembler_version",
            "counts", "notes", "last_error",
        ]  # fmt: skip
        read_only_fields = fields


# --- Context packs (GET /api/v1/context): `retrieval.services.context.pack_payload` -----


class PackCitationSerializer(serializers.Serializer[dict[str, Any]]):
    """Where a packed fact was read (its snippet may be cut to fit the budget)."""

    source = serializers.CharField(allow_blank=True)  # type: ignore[assignment]
    episode = serializers.CharField(allow_blank=True, help_text="the episode's external id")
    url = serializers.CharField(allow_blank=True)
    snippet = serializers.CharField(allow_blank=True, help_text="may be cut to fit the budget")


class PackFactSerializer(serializers.Serializer[dict[str, Any]]):
    """One packed fact: the triple, its validity, tier, status and citations."""

    claim_ids = serializers.ListField(
        child=serializers.IntegerField(), help_text="the claims stating it (several scopes)"
    )
    fact = serializers.CharField(allow_blank=True)
    subject = serializers.CharField(allow_blank=True)
    predicate = serializers.CharField(allow_blank=True)
    object = serializers.CharField(allow_blank=True)
    valid_from = serializers.DateTimeField()
    valid_to = serializers.DateTimeField(allow_null=True, help_text="null: still valid")
    tier = serializers.IntegerField()
    status = serializers.CharField(allow_blank=True)
    citations = PackCitationSerializer(many=True)
    beside = serializers.IntegerField(
        allow_null=True,
        help_text="not a hit: the statement next to the hit whose claim id this is "
        "(its context in the same document); null for a hit",
    )


class ContextPackSerializer(serializers.Serializer[dict[str, Any]]):
    """A context pack: the best cited facts for a question within a token budget, current
    facts first, history (superseded, ended or not yet valid then) apart; `text` is
    what to put in a prompt, and `tokens` its count, never above `token_budget`."""

    pack_id = serializers.UUIDField(
        allow_null=True,
        help_text="what the pack was kept under (null: not kept, e.g. no facts of the "
        "caller's own workspaces)",
    )
    assembler_version = serializers.IntegerField()
    token_budget = serializers.IntegerField()
    tokens = serializers.IntegerField(help_text="of `text`, counted by `tokenizer`")
    tokenizer = serializers.CharField(
        help_text="the local MiniLM's WordPiece (approximates GPT-style tokenizers)"
    )
    as_of = serializers.DateTimeField(help_text="the instant the current facts hold at")
    snapshot = serializers.IntegerField(allow_null=True, help_text="the snapshot packed")
    current = PackFactSerializer(many=True)
    history = PackFactSerializer(many=True)
    text = serializers.CharField(allow_blank=True, help_text="the rendered pack")
