"""Retrieval persistence: the search index (a projection of published claims), hits, votes.

Every table carries `group_id` under forced row-level security (migrations).
"""

from __future__ import annotations

import pgtrigger
from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import F, Func, Q, Value
from django.db.models.functions import Lower
from pgvector.django import VectorField

from retrieval.domain.lexical import PUNCTUATION
from retrieval.domain.ranking import DEFAULT_UNDERSTOOD

# Dimensions with an HNSW index (pgvector indexes need a fixed dimension): hashing,
# MiniLM, Voyage, OpenAI text-embedding-3-small.
INDEXED_DIMENSIONS = (256, 384, 1024, 1536)


class GroupEmbedding(models.Model):
    """The embedding model a group is indexed with; writes with another model are refused.

    `provider` names the model among those the operator offers (VERA_EMBEDDER__CHOICES):
    the first write records the default, a workspace admin's switch records another
    (`retrieval.services.embedding.embedding_switch`), and the group's claims are then
    re-embedded in the background. Empty on pins older than the choice: then the
    offered model with this `model` name serves the group.
    """

    group_id = models.CharField(max_length=40, unique=True)
    provider = models.CharField(max_length=20, blank=True, default="")
    model = models.CharField(max_length=100)
    dimension = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)
    switched_at = models.DateTimeField(null=True, blank=True)
    # A second offered model the group is also searched with (its documents get a
    # `CompanionVector` each, its queries a vector list of their own); empty: none.
    companion = models.CharField(max_length=20, blank=True, default="")
    # When a workspace admin last set or removed the companion. Until one has, a workspace
    # that comes to hold a conversation source gets VERA_EMBEDDER__CONVERSATION_COMPANION;
    # after, their choice stands.
    companion_chosen_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.group_id}: {self.model} ({self.dimension})"


class ProviderUsage(models.Model):
    """What one workspace's provider calls added up to on one day (UTC), per model.

    Written only by `provider_usage_flush`, an upsert that adds to the day's row; the
    exact running figures are the Prometheus counters, this is their account per workspace.
    """

    group_id = models.CharField(max_length=40)
    day = models.DateField()
    provider = models.CharField(max_length=40)
    model = models.CharField(max_length=100)
    calls = models.PositiveBigIntegerField(default=0)
    tokens = models.PositiveBigIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=16, decimal_places=8, default=0)

    class Meta:
        verbose_name = "provider usage"
        verbose_name_plural = "provider usage (cost)"
        constraints = [
            models.UniqueConstraint(
                fields=["group_id", "day", "provider", "model"], name="provider_usage_once_a_day"
            )
        ]

    def __str__(self) -> str:
        return f"{self.group_id} {self.day} {self.provider}/{self.model}"


class SearchDocument(models.Model):
    """One published claim as the search index sees it: text, vector and ranking signals."""

    group_id = models.CharField(max_length=40)
    claim = models.OneToOneField(
        "curation.Claim", on_delete=models.CASCADE, related_name="search_document"
    )
    text = models.TextField()
    # `simple`: no stemming, no stop words, diacritics kept — any language by exact form;
    # ASCII punctuation is a space first (`lexical.PUNCTUATION`: "IL-6" is "il" and "6").
    tsv = models.GeneratedField(
        expression=SearchVector(
            Func(
                F("text"),
                Value(PUNCTUATION),
                Value(" "),
                Value("g"),
                function="regexp_replace",
                output_field=models.TextField(),
            ),
            config="simple",
        ),
        output_field=SearchVectorField(),
        db_persist=True,
    )
    embedding = VectorField(null=True)
    dimension = models.PositiveIntegerField(null=True)
    embedding_model = models.CharField(max_length=100, blank=True)
    # Denormalised signals and filters, so ranking needs no join.
    status = models.CharField(max_length=20)
    predicate = models.CharField(max_length=100)
    subject_name = models.CharField(max_length=300)
    subject_key = models.GeneratedField(
        expression=Lower("subject_name"), output_field=models.CharField(), db_persist=True
    )  # what the understood list compares (`SUBJECT_KEY`)
    source_id = models.BigIntegerField()
    tier = models.PositiveSmallIntegerField()
    authority = models.FloatField()
    verification = models.FloatField()
    confidence = models.FloatField()
    valid_from = models.DateTimeField()
    valid_to = models.DateTimeField(null=True, blank=True)
    indexed_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [
            GinIndex(fields=["tsv"], name="searchdoc_tsv"),
            models.Index(fields=["group_id", "status"], name="searchdoc_group_status"),
            # The understood list: the claims about the entities a question names. A
            # stored key, not an index on `lower(subject_name)`: under row-level security
            # a condition may run before the policy only if its functions are leakproof,
            # and `lower()` is not, so the expression index went unused and the list read
            # every document of the workspace; `=` on text is leakproof.
            models.Index(fields=["subject_key"], name="searchdoc_subject_key"),
            # A workspace's documents still on its previous model (a switch's catch-up).
            models.Index(fields=["group_id", "embedding_model"], name="searchdoc_group_model"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(embedding__isnull=True) | Q(dimension__isnull=False),
                name="searchdoc_dimension_with_embedding",
            )
        ]

    def __str__(self) -> str:
        return f"claim {self.claim_id}"


class CompanionVector(models.Model):
    """A second vector of an index document, by its group's companion model.

    A workspace searched with two models (say MiniLM and multilingual e5) fuses three
    stage-1 lists: full text, the pinned model's vectors (`SearchDocument.embedding`)
    and the companion's (these rows). The row goes with its document.
    """

    group_id = models.CharField(max_length=40)
    document = models.ForeignKey(
        SearchDocument, on_delete=models.CASCADE, related_name="companion_vectors"
    )
    model = models.CharField(max_length=100)
    dimension = models.PositiveIntegerField()
    embedding = VectorField()
    indexed_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["document", "model"], name="companion_once_per_model")
        ]
        indexes = [models.Index(fields=["group_id", "model"], name="companion_group_model")]

    def __str__(self) -> str:
        return f"document {self.document_id} by {self.model}"


# The inverted index's statistics are kept by statement-level triggers on its rows, so
# every path that adds or removes postings (indexing, a cascade from erasure) keeps the
# document frequencies and corpus sizes exact. The corpus row is written first: every
# writer of a group queues on that one row before it touches term rows, so two indexing
# transactions can never deadlock on terms.
_POSTINGS_ADDED = """
    INSERT INTO retrieval_lexicalcorpus AS c (group_id, documents, tokens)
        SELECT group_id, count(DISTINCT claim_id), sum(tf) FROM changed
        GROUP BY group_id ORDER BY group_id
    ON CONFLICT (group_id) DO UPDATE
        SET documents = c.documents + excluded.documents, tokens = c.tokens + excluded.tokens;
    INSERT INTO retrieval_lexicaltermstat AS s (group_id, term, df)
        SELECT group_id, term, count(*) FROM changed GROUP BY group_id, term ORDER BY 1, 2
    ON CONFLICT (group_id, term) DO UPDATE SET df = s.df + excluded.df;
    RETURN NULL;
"""
_POSTINGS_REMOVED = """
    UPDATE retrieval_lexicalcorpus AS c
        SET documents = c.documents - r.documents, tokens = c.tokens - r.tokens
        FROM (
            SELECT group_id, count(DISTINCT claim_id) AS documents, sum(tf) AS tokens
            FROM changed GROUP BY group_id ORDER BY group_id
        ) AS r
        WHERE c.group_id = r.group_id;
    UPDATE retrieval_lexicaltermstat AS s SET df = s.df - r.df
        FROM (
            SELECT group_id, term, count(*) AS df FROM changed
            GROUP BY group_id, term ORDER BY 1, 2
        ) AS r
        WHERE s.group_id = r.group_id AND s.term = r.term;
    DELETE FROM retrieval_lexicaltermstat AS s USING changed AS r
        WHERE s.group_id = r.group_id AND s.term = r.term AND s.df <= 0;
    RETURN NULL;
"""


class LexicalTerm(models.Model):
    """One term of one indexed claim: the inverted index BM25 scores from (tsvector lexemes)."""

    pk = models.CompositePrimaryKey("claim_id", "term")
    group_id = models.CharField(max_length=40)
    claim_id = models.BigIntegerField()
    term = models.TextField()
    tf = models.PositiveIntegerField()
    doc_len = models.PositiveIntegerField()
    # BM25's term-frequency part at index time: orders a term's postings, best first, so a
    # query reads only the top of each list (the score itself uses the current averages).
    impact = models.FloatField()
    # The claim is valid now (its document's status is `published`): a search "as of now"
    # with no other filter reads the postings alone, never joining the documents.
    published = models.BooleanField()
    # The claim's validity (its document's): a search "as of" a time with no other filter
    # reads the postings alone too, each term's best that were valid then.
    valid_from = models.DateTimeField()
    valid_to = models.DateTimeField(null=True)

    class Meta:
        indexes = [
            # Both lead with the group: a query term's best postings in a workspace are
            # the top of one index range, however much other workspaces hold of the
            # term (led by the term, a small workspace beside a large one read the
            # large one's postings until enough of its own passed row-level security).
            # Covering as well: the as-of scan filters on validity inside the index.
            models.Index(
                fields=["group_id", "term", "-impact"],
                include=["claim_id", "tf", "doc_len", "valid_from", "valid_to", "published"],
                name="lexterm_group_term_impact",
            ),
            # Covering: an index-only, early-stopping scan of the best postings of each
            # query term in each group the caller sees.
            models.Index(
                fields=["group_id", "term", "-impact"],
                include=["claim_id", "tf", "doc_len"],
                condition=Q(published=True),
                name="lexterm_group_published",
            ),
        ]
        triggers = [
            pgtrigger.Trigger(
                name="lexicalterm_count_added",
                when=pgtrigger.After,
                operation=pgtrigger.Insert,
                level=pgtrigger.Statement,
                referencing=pgtrigger.Referencing(new="changed"),
                func=_POSTINGS_ADDED,
            ),
            pgtrigger.Trigger(
                name="lexicalterm_count_removed",
                when=pgtrigger.After,
                operation=pgtrigger.Delete,
                level=pgtrigger.Statement,
                referencing=pgtrigger.Referencing(old="changed"),
                func=_POSTINGS_REMOVED,
            ),
            pgtrigger.Protect(name="lexicalterm_no_update", operation=pgtrigger.Update),
        ]

    def __str__(self) -> str:
        return f"{self.term!r} in claim {self.claim_id} (tf {self.tf})"


class LexicalTermStat(models.Model):
    """How many of a group's indexed claims contain a term (BM25's document frequency)."""

    # Term first: a query looks its terms up across every group it may see.
    pk = models.CompositePrimaryKey("term", "group_id")
    group_id = models.CharField(max_length=40)
    term = models.TextField()
    df = models.PositiveIntegerField()

    def __str__(self) -> str:
        return f"{self.group_id}: {self.term!r} in {self.df}"


class LexicalCorpus(models.Model):
    """A group's lexical corpus size: indexed claims and their total tokens (BM25's N and avgdl)."""

    group_id = models.CharField(max_length=40, primary_key=True)
    documents = models.PositiveIntegerField()
    tokens = models.PositiveBigIntegerField()

    class Meta:
        verbose_name_plural = "lexical corpora"

    def __str__(self) -> str:
        return f"{self.group_id}: {self.documents} claims, {self.tokens} tokens"


class SearchHit(models.Model):
    """A hit returned to a caller, with the signal vector it was ranked by (for calibration)."""

    group_id = models.CharField(max_length=40)
    query_id = models.UUIDField(db_index=True)
    query_text = models.TextField()
    claim_id = models.BigIntegerField()
    rank = models.PositiveSmallIntegerField()
    score = models.FloatField()
    signals = models.JSONField()
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    # The weight set that ranked it (version 0, no set: the built-in default).
    weight_set = models.ForeignKey(
        "WeightSet", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    weight_version = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    def __str__(self) -> str:
        return f"hit {self.pk} (claim {self.claim_id})"


class Feedback(models.Model):
    """A thumbs up or down on a hit."""

    group_id = models.CharField(max_length=40)
    hit = models.ForeignKey(SearchHit, on_delete=models.CASCADE, related_name="votes")
    claim_id = models.BigIntegerField(db_index=True)
    helpful = models.BooleanField()
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["hit", "user"], name="feedback_once_per_user_and_hit")
        ]

    def __str__(self) -> str:
        return f"{'+' if self.helpful else '-'} claim {self.claim_id}"


class ContextPack(models.Model):
    """A context pack served to a caller, kept for feedback: this workspace's part of it.

    A pack of facts from several workspaces is kept as one row per workspace (all under
    one `pack_id`), each with only that workspace's claims, episodes and rendered text,
    so a reader of one never reads another's. Erasure deletes the rows citing what it
    erases (`claim_ids`, `episode_ids`).
    """

    group_id = models.CharField(max_length=40)
    pack_id = models.UUIDField(db_index=True)  # what the caller was given; one per pack
    query_text = models.TextField()
    as_of = models.DateTimeField()  # the instant the pack's facts are current at
    snapshot_id = models.BigIntegerField(null=True, blank=True)  # packed from a snapshot
    assembler_version = models.PositiveIntegerField()
    tokenizer = models.CharField(max_length=100)
    token_budget = models.PositiveIntegerField()
    tokens = models.PositiveIntegerField()  # the served pack's text, counted by `tokenizer`
    claim_ids = ArrayField(models.BigIntegerField(), default=list)
    episode_ids = ArrayField(models.BigIntegerField(), default=list)
    text = models.TextField()  # this workspace's facts, rendered as the pack renders them
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            models.Index(fields=["group_id", "-created_at"], name="contextpack_group_created"),
            GinIndex(fields=["claim_ids"], name="contextpack_claims"),
            GinIndex(fields=["episode_ids"], name="contextpack_episodes"),
        ]

    def __str__(self) -> str:
        return f"context pack {self.pack_id} ({self.group_id})"


# --- The learning loop: weight sets, calibration and golden-set evaluation -------------


WEIGHTSET_CONTENT_FIELDS = (
    "group_id", "version", "relevance", "authority", "verification", "recency", "feedback",
    "confidence", "understood", "origin", "helpful", "unhelpful", "separations",
)  # fmt: skip


class WeightSet(models.Model):
    """A versioned set of the six blend weights of one workspace, with its evidence.

    Sets are never edited or deleted: calibration adds one, activation switches which
    one ranks (exactly one active per workspace; none active means the built-in
    default, version 0), and rolling back is activating an earlier one.
    """

    class Origin(models.TextChoices):
        CALIBRATION = "calibration", "calibration"
        MANUAL = "manual", "entered by an operator"

    group_id = models.CharField(max_length=40)
    version = models.PositiveIntegerField()
    relevance = models.FloatField()
    authority = models.FloatField()
    verification = models.FloatField()
    recency = models.FloatField()
    feedback = models.FloatField()
    confidence = models.FloatField()
    # The understood list's weight in stage 1's fusion, learnt from the same votes.
    understood = models.FloatField(default=DEFAULT_UNDERSTOOD)
    origin = models.CharField(max_length=20, choices=Origin.choices)
    helpful = models.PositiveIntegerField(default=0)  # samples per class behind it
    unhelpful = models.PositiveIntegerField(default=0)
    separations = models.JSONField(default=dict)  # signed mean difference per signal
    active = models.BooleanField(default=False)
    activated_at = models.DateTimeField(null=True, blank=True)
    activated_by = models.CharField(max_length=200, blank=True)  # who or what, last time
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["group_id", "version"], name="weightset_version"),
            models.UniqueConstraint(
                fields=["group_id"], condition=Q(active=True), name="weightset_one_active"
            ),
        ]
        # What a set ranks with, and the evidence behind it, never change once stored.
        triggers = [
            pgtrigger.Protect(
                name="weightset_content_immutable",
                operation=pgtrigger.Update,
                condition=pgtrigger.AnyChange(*WEIGHTSET_CONTENT_FIELDS),
            )
        ]

    def __str__(self) -> str:
        return f"weights v{self.version} ({self.group_id})"


class WeightActivation(models.Model):
    """Each switch of a workspace's active weight set: the history the charts mark."""

    group_id = models.CharField(max_length=40)
    # None: back to the built-in default (version 0).
    weight_set = models.ForeignKey(
        WeightSet, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    previous = models.ForeignKey(
        WeightSet, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    actor_label = models.CharField(max_length=200)
    reason = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    def __str__(self) -> str:
        version = self.weight_set.version if self.weight_set else 0
        return f"v{version} activated by {self.actor_label}"


class LearningRun(models.Model):
    """Fields every recorded calibration or evaluation run shares."""

    class Trigger(models.TextChoices):
        SCHEDULE = "schedule", "schedule"
        COMMAND = "command", "command"
        PORTAL = "portal", "portal"
        TEST = "test", "test"

    group_id = models.CharField(max_length=40)
    # A re-delivered task carries the same key and finds the run it already recorded.
    run_key = models.CharField(max_length=200, blank=True)
    trigger = models.CharField(max_length=20, choices=Trigger.choices)
    status = models.CharField(max_length=20)
    message = models.TextField(blank=True)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True


class CalibrationRun(LearningRun):
    """One calibration: the samples it read and the candidate set it produced (if any)."""

    class Status(models.TextChoices):
        CANDIDATE = "candidate", "candidate stored"
        ACTIVATED = "activated", "candidate stored and activated"
        TOO_FEW_SAMPLES = "too_few_samples", "too few samples: weights unchanged"
        NO_SIGNAL = "no_signal", "no signal separates: weights unchanged"

    window_start = models.DateTimeField()
    window_end = models.DateTimeField()
    helpful = models.PositiveIntegerField(default=0)
    unhelpful = models.PositiveIntegerField(default=0)
    separations = models.JSONField(default=dict)
    candidate = models.OneToOneField(
        WeightSet, null=True, blank=True, on_delete=models.PROTECT, related_name="calibration"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["group_id", "run_key"],
                condition=~Q(run_key=""),
                name="calibrationrun_once_per_key",
            )
        ]

    def __str__(self) -> str:
        return f"calibration {self.pk} ({self.status})"


class GoldenQuery(models.Model):
    """A query with known correct answers, evaluated through the real search."""

    group_id = models.CharField(max_length=40)
    key = models.CharField(max_length=200, help_text="a stable name, e.g. the BEIR query id")
    text = models.TextField()
    expected_claim_ids = ArrayField(models.BigIntegerField(), default=list, blank=True)
    expected_episodes = ArrayField(
        models.CharField(max_length=500), default=list, blank=True,
        help_text="external ids of episodes a correct hit cites",
    )  # fmt: skip
    expected_texts = ArrayField(
        models.TextField(), default=list, blank=True,
        help_text="substrings a correct hit's fact or citation contains",
    )  # fmt: skip
    as_of = models.DateTimeField(null=True, blank=True)
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "golden queries"
        constraints = [
            models.UniqueConstraint(fields=["group_id", "key"], name="goldenquery_key"),
            models.CheckConstraint(
                condition=~Q(expected_claim_ids=[], expected_episodes=[], expected_texts=[]),
                name="goldenquery_expects_something",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.key}: {self.text[:60]}"


class EvaluationRun(LearningRun):
    """One run of a workspace's golden set: scores overall, per query, and what ranked."""

    class Status(models.TextChoices):
        PASSED = "passed", "passed"
        FAILED = "failed", "below a floor"
        EMPTY = "empty", "no golden queries"

    weight_set = models.ForeignKey(
        WeightSet, null=True, blank=True, on_delete=models.PROTECT, related_name="evaluations"
    )
    weight_version = models.PositiveIntegerField(default=0)
    embedder_model = models.CharField(max_length=200, blank=True)
    queries = models.PositiveIntegerField(default=0)
    hit_at_1 = models.FloatField(default=0.0)
    hit_at_3 = models.FloatField(default=0.0)
    hit_at_10 = models.FloatField(default=0.0)
    mrr = models.FloatField(default=0.0)
    ndcg_at_10 = models.FloatField(default=0.0)
    latency_p50_ms = models.FloatField(default=0.0)
    latency_p95_ms = models.FloatField(default=0.0)
    floors = models.JSONField(default=dict)
    failures = models.JSONField(default=list)  # one sentence per metric below its floor

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["group_id", "run_key"],
                condition=~Q(run_key=""),
                name="evaluationrun_once_per_key",
            )
        ]

    def __str__(self) -> str:
        return f"evaluation {self.pk} ({self.status})"


class EvaluationResult(models.Model):
    """One golden query's outcome in one evaluation run."""

    group_id = models.CharField(max_length=40)
    run = models.ForeignKey(EvaluationRun, on_delete=models.CASCADE, related_name="results")
    golden = models.ForeignKey(
        GoldenQuery, null=True, on_delete=models.SET_NULL, related_name="results"
    )
    query_text = models.TextField()
    first_rank = models.PositiveSmallIntegerField(null=True)
    reciprocal_rank = models.FloatField()
    ndcg_at_10 = models.FloatField()
    hit_at_10 = models.FloatField()
    claim_ids = ArrayField(models.BigIntegerField(), default=list)  # the top 10, in order
    latency_ms = models.FloatField()

    def __str__(self) -> str:
        return f"{self.query_text[:40]}: nDCG@10 {self.ndcg_at_10:.2f}"


class WordSuggestion(models.Model):
    """A question word learnt from votes for one predicate of a workspace's ontology
    (`retrieval.domain.word_learning`), waiting for an admin: accepted, it is added to the
    predicate's words (through the audited ontology edit); dismissed, it is not suggested
    again. Nothing is added to an ontology without an admin's decision."""

    class Status(models.TextChoices):
        PENDING = "pending"
        ACCEPTED = "accepted"
        DISMISSED = "dismissed"

    group_id = models.CharField(max_length=40)
    predicate = models.CharField(max_length=100)
    word = models.CharField(max_length=100)
    support = models.PositiveIntegerField()  # questions that used it, helpfully answered
    against = models.PositiveIntegerField(default=0)  # ... unhelpfully answered
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )  # fmt: skip
    decided_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["group_id", "predicate", "word"], name="word_suggestion_once"
            )
        ]
        indexes = [models.Index(fields=["group_id", "status"], name="word_suggestion_status")]

    def __str__(self) -> str:
        return f"{self.word!r} for {self.predicate} ({self.status})"


# --- Knowledge snapshots: the retrieval inputs of a workspace, frozen and sealed ------


class Snapshot(models.Model):
    """A workspace's retrieval inputs copied at one instant, so a search can be reproduced.

    Taking one writes this row (`building`); a maintenance worker copies the index
    documents, their postings and votes in one repeatable-read transaction, pins what
    ranks them (`pins`: the embedding models, predicate set and ontology version, weight
    set, fusion, reranker, ranker and context-pack assembler versions) and seals it with
    a checksum over all of it. A search runs against a sealed snapshot only while its
    content still has that checksum.
    Erasure removes erased content from every snapshot and re-seals it, with a note.
    """

    class Status(models.TextChoices):
        BUILDING = "building"
        SEALED = "sealed"
        FAILED = "failed"

    group_id = models.CharField(max_length=40)
    name = models.CharField(max_length=200)
    reason = models.CharField(max_length=500, blank=True)
    created_by = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.BUILDING)
    # The system time the copy saw (the repeatable-read transaction's start): searches
    # of the snapshot rank recency as of then.
    taken_at = models.DateTimeField(null=True, blank=True)
    sealed_at = models.DateTimeField(null=True, blank=True)
    checksum = models.CharField(max_length=64, blank=True)
    pins = models.JSONField(default=dict, blank=True)
    # The version of the workspace's ontology the copy saw (also in `pins`, under the
    # seal); `curation.selectors.ontology_at` reads that ontology back exactly. NULL while
    # building, and for snapshots sealed before the ontology was pinned.
    ontology_version = models.PositiveIntegerField(null=True, blank=True)
    # The context-pack assembler (`retrieval.domain.context.ASSEMBLER_VERSION`) it packs
    # with (also in `pins`); NULL while building and for snapshots sealed before.
    assembler_version = models.PositiveIntegerField(null=True, blank=True)
    counts = models.JSONField(default=dict, blank=True)
    # What happened to it since it was sealed (re-seals after erasures), one line each.
    notes = models.TextField(blank=True)
    # Raised by a trigger with every statement that adds or removes its rows (sealed rows
    # cannot be updated): a search re-verifies the checksum only when it has moved.
    generation = models.PositiveBigIntegerField(default=0)
    last_error = models.TextField(blank=True)

    class Meta:
        indexes = [models.Index(fields=["group_id", "-created_at"], name="snapshot_group_created")]
        constraints = [
            models.CheckConstraint(
                condition=~Q(status="sealed") | (Q(sealed_at__isnull=False) & ~Q(checksum="")),
                name="snapshot_sealed_has_checksum",
            )
        ]

    def __str__(self) -> str:
        return f"snapshot {self.pk} {self.name!r} ({self.status})"


# Every statement that adds or removes a snapshot's rows moves its generation.
_SNAPSHOT_CHANGED = """
    UPDATE retrieval_snapshot SET generation = generation + 1
    WHERE id IN (SELECT DISTINCT snapshot_id FROM changed);
    RETURN NULL;
"""


def _generation_triggers(table: str) -> list[pgtrigger.Trigger]:
    return [
        pgtrigger.Trigger(
            name=f"{table}_added", when=pgtrigger.After, operation=pgtrigger.Insert,
            level=pgtrigger.Statement, referencing=pgtrigger.Referencing(new="changed"),
            func=_SNAPSHOT_CHANGED,
        ),
        pgtrigger.Trigger(
            name=f"{table}_removed", when=pgtrigger.After, operation=pgtrigger.Delete,
            level=pgtrigger.Statement, referencing=pgtrigger.Referencing(old="changed"),
            func=_SNAPSHOT_CHANGED,
        ),
    ]  # fmt: skip


class SnapshotDocument(models.Model):
    """One index document as it was when its snapshot was taken (the signals ranking reads,
    its vectors, and what a hit shows: the fact and its citations, in `card`)."""

    group_id = models.CharField(max_length=40)
    snapshot = models.ForeignKey(
        Snapshot, on_delete=models.CASCADE, related_name="documents", db_index=False
    )  # the unique (snapshot, claim) index leads with it
    claim_id = models.BigIntegerField()
    text = models.TextField()
    embedding = VectorField(null=True)
    dimension = models.PositiveIntegerField(null=True)
    embedding_model = models.CharField(max_length=100, blank=True)
    companion = VectorField(null=True)
    status = models.CharField(max_length=20)
    predicate = models.CharField(max_length=100)
    subject_name = models.CharField(max_length=300)
    subject_key = models.GeneratedField(
        expression=Lower("subject_name"), output_field=models.CharField(), db_persist=True
    )  # as SearchDocument's
    source_id = models.BigIntegerField()
    tier = models.PositiveSmallIntegerField()
    authority = models.FloatField()
    verification = models.FloatField()
    confidence = models.FloatField()
    valid_from = models.DateTimeField()
    valid_to = models.DateTimeField(null=True, blank=True)
    up = models.PositiveIntegerField(default=0)
    down = models.PositiveIntegerField(default=0)
    # The episodes its citations quote: an erasure of any of them removes the document.
    episode_ids = ArrayField(models.BigIntegerField(), default=list)
    card = models.JSONField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["snapshot", "claim_id"], name="snapshotdoc_once")
        ]
        indexes = [
            GinIndex(fields=["episode_ids"], name="snapshotdoc_episodes"),
            models.Index(fields=["snapshot", "subject_key"], name="snapshotdoc_subject_key"),
        ]
        triggers = [
            # Sealed content is never edited: erasure deletes, nothing updates.
            pgtrigger.Protect(name="snapshotdocument_no_update", operation=pgtrigger.Update),
            *_generation_triggers("snapshotdocument"),
        ]

    def __str__(self) -> str:
        return f"snapshot {self.snapshot_id}: claim {self.claim_id}"


# A snapshot's document frequencies, kept by statement-level triggers on its postings
# (copied with an impact: postings copied before have none, and are counted at search).
_SNAPSHOT_POSTINGS_ADDED = """
    INSERT INTO retrieval_snapshottermstat AS s (group_id, snapshot_id, term, df)
        SELECT group_id, snapshot_id, term, count(*) FROM changed WHERE impact IS NOT NULL
        GROUP BY group_id, snapshot_id, term ORDER BY 2, 3
    ON CONFLICT (snapshot_id, term) DO UPDATE SET df = s.df + excluded.df;
    RETURN NULL;
"""
_SNAPSHOT_POSTINGS_REMOVED = """
    UPDATE retrieval_snapshottermstat AS s SET df = s.df - r.df
        FROM (
            SELECT snapshot_id, term, count(*) AS df FROM changed WHERE impact IS NOT NULL
            GROUP BY snapshot_id, term ORDER BY 1, 2
        ) AS r
        WHERE s.snapshot_id = r.snapshot_id AND s.term = r.term;
    DELETE FROM retrieval_snapshottermstat AS s USING changed AS r
        WHERE s.snapshot_id = r.snapshot_id AND s.term = r.term AND s.df <= 0;
    RETURN NULL;
"""


class SnapshotTerm(models.Model):
    """One posting of a snapshot's inverted index (BM25 over the snapshot's own corpus)."""

    pk = models.CompositePrimaryKey("snapshot_id", "term", "claim_id")
    group_id = models.CharField(max_length=40)
    snapshot = models.ForeignKey(
        Snapshot, on_delete=models.CASCADE, related_name="+", db_index=False
    )  # the primary key leads with it
    term = models.TextField()
    claim_id = models.BigIntegerField()
    tf = models.PositiveIntegerField()
    doc_len = models.PositiveIntegerField()
    # As `LexicalTerm`'s, for the snapshot: the impact (BM25's term-frequency part at the
    # snapshot's own average length) orders a term's postings, best first; `published`
    # and the validity are its document's, so a search at the snapshot's instant or as of
    # a time with no other filter reads the postings alone. All under the seal; NULL in
    # snapshots sealed before they were copied, whose searches read every posting.
    impact = models.FloatField(null=True)
    published = models.BooleanField(null=True)
    valid_from = models.DateTimeField(null=True)
    valid_to = models.DateTimeField(null=True)

    class Meta:
        indexes = [
            # Covering (row-level security reads group_id): an index-only scan of the
            # best postings of each query term that stops early, valid then.
            models.Index(
                fields=["snapshot", "term", "-impact"],
                include=["claim_id", "tf", "doc_len", "group_id", "valid_from", "valid_to"],
                name="snapterm_term_impact",
            ),
            models.Index(
                fields=["snapshot", "term", "-impact"],
                include=["claim_id", "tf", "doc_len", "group_id"],
                condition=Q(published=True),
                name="snapterm_published_impact",
            ),
        ]
        triggers = [
            pgtrigger.Protect(name="snapshotterm_no_update", operation=pgtrigger.Update),
            *_generation_triggers("snapshotterm"),
            pgtrigger.Trigger(
                name="snapshotterm_count_added", when=pgtrigger.After,
                operation=pgtrigger.Insert, level=pgtrigger.Statement,
                referencing=pgtrigger.Referencing(new="changed"), func=_SNAPSHOT_POSTINGS_ADDED,
            ),
            pgtrigger.Trigger(
                name="snapshotterm_count_removed", when=pgtrigger.After,
                operation=pgtrigger.Delete, level=pgtrigger.Statement,
                referencing=pgtrigger.Referencing(old="changed"),
                func=_SNAPSHOT_POSTINGS_REMOVED,
            ),
        ]  # fmt: skip

    def __str__(self) -> str:
        return f"snapshot {self.snapshot_id}: {self.term!r} in claim {self.claim_id}"


class SnapshotTermStat(models.Model):
    """How many of a snapshot's documents contain a term (BM25's document frequency), kept
    by triggers on its postings; under the seal with them."""

    pk = models.CompositePrimaryKey("snapshot_id", "term")
    group_id = models.CharField(max_length=40)
    snapshot = models.ForeignKey(
        Snapshot, on_delete=models.CASCADE, related_name="+", db_index=False
    )  # the primary key leads with it
    term = models.TextField()
    df = models.PositiveIntegerField()

    class Meta:
        # Its postings' triggers update it (an erasure); so the seal is re-verified after
        # any change to it, an update moves the generation too.
        triggers = [
            *_generation_triggers("snapshottermstat"),
            pgtrigger.Trigger(
                name="snapshottermstat_updated", when=pgtrigger.After,
                operation=pgtrigger.Update, level=pgtrigger.Statement,
                referencing=pgtrigger.Referencing(new="changed"), func=_SNAPSHOT_CHANGED,
            ),
        ]  # fmt: skip

    def __str__(self) -> str:
        return f"snapshot {self.snapshot_id}: {self.term!r} in {self.df}"
