"""Curation persistence: sources, episodes, entities, claims, evidence, outbox.

Every table carries `group_id` and is under forced row-level security (migrations).
"""

from __future__ import annotations

import enum

import pgtrigger
from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GistIndex
from django.db import models
from django.db.models import F, Q
from django.utils import timezone
from pgvector.django import VectorField

from curation.domain.lifecycle import transitions
from curation.domain.ontology import MAX_TEXT, MAX_WORDS
from curation.domain.ontology_records import MAX_NAME, MAX_OBJECT_TYPE
from curation.domain.outbox import Consumer, Priority
from curation.domain.records import PREDICATE_PATTERN
from curation.domain.sources import AGENT_KIND, SOURCE_KINDS, ConnectorKind
from curation.domain.tiers import ClaimStatus, Tier, Verification

# The values of ConnectorKind, in its order: the kinds a tenant may configure.
CONNECTOR_KINDS = [kind.value for kind in ConnectorKind]


def _choices(enum_type: type[enum.StrEnum]) -> list[tuple[str, str]]:
    return [(member.value, member.name.replace("_", " ").lower()) for member in enum_type]


class Source(models.Model):
    """Where records come from: a connector, its config, its cursor and its trust tier.

    Secrets never live here: `token_env` names the environment variable holding one.
    """

    group_id = models.CharField(max_length=40, db_index=True)
    # The scope that configured the source; a personal one can only propose elsewhere.
    origin_group_id = models.CharField(max_length=40)
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=20, choices=[(k, k) for k in SOURCE_KINDS])
    config = models.JSONField(default=dict, blank=True)
    token_env = models.CharField(max_length=100, blank=True)
    # NULL means "never run": distinct from an empty cursor some APIs return.
    cursor = models.TextField(null=True, blank=True)  # noqa: DJ001
    trust_tier = models.PositiveSmallIntegerField(choices=[(t.value, t.name.title()) for t in Tier])
    schedule_seconds = models.PositiveIntegerField(null=True, blank=True)
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_run_at = models.DateTimeField(null=True, blank=True)
    # When a run was last sent to a worker (by the schedule or an admin's "run now"); a
    # request later than last_run_at is still waiting or running, so it is not sent again.
    run_requested_at = models.DateTimeField(null=True, blank=True)
    last_run_status = models.CharField(max_length=20, blank=True)
    last_error = models.TextField(blank=True)
    # The running (or last) ingest's progress: {"state", "started_at", "updated_at",
    # "pages", "records", "new", "unchanged", "failed", "total"}; written per page.
    progress = models.JSONField(default=dict, blank=True)
    # What an operator granted this source beyond the global allow-lists:
    # {"hosts": [...], "file_roots": [...]}. Written only by `manage.py source_reach`
    # (audited); no tenant-facing form or API exposes it.
    reach = models.JSONField(default=dict, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["group_id", "name"], name="source_name_per_group"),
            models.CheckConstraint(condition=Q(trust_tier__in=[1, 2, 3, 4]), name="source_tier"),
            models.CheckConstraint(condition=Q(kind__in=SOURCE_KINDS), name="source_kind"),
            # The agents' source has no connector: never scheduled, so never run.
            models.CheckConstraint(
                condition=~Q(kind=AGENT_KIND) | Q(schedule_seconds__isnull=True),
                name="source_agent_never_scheduled",
            ),
            models.UniqueConstraint(
                fields=["group_id"], condition=Q(kind=AGENT_KIND), name="source_one_agent_per_group"
            ),
            models.CheckConstraint(
                condition=Q(token_env="") | Q(token_env__regex=r"^[A-Z_][A-Z0-9_]*$"),  # noqa: S106 - a name pattern
                name="source_token_env_is_a_variable_name",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind}, tier {self.trust_tier})"


class EpisodeStatus(models.TextChoices):
    STORED = "stored"
    PROCESSED = "processed"
    FAILED = "failed"
    RETRACTED = "retracted"


EPISODE_CONTENT_FIELDS = (
    "source", "external_id", "url", "title", "content_hash", "object_key", "mime",
    "size", "fetched_at", "group_id", "record_fields", "record_updated_at", "version_from",
    "location",
)  # fmt: skip


class Episode(models.Model):
    """One fetched artifact, immutable: its bytes live in the object store under object_key."""

    group_id = models.CharField(max_length=40)
    source = models.ForeignKey(Source, on_delete=models.PROTECT, related_name="episodes")
    external_id = models.CharField(max_length=500)
    url = models.URLField(max_length=2000, blank=True)
    title = models.CharField(max_length=500, blank=True)
    content_hash = models.CharField(max_length=64)
    object_key = models.CharField(max_length=300, blank=True)
    mime = models.CharField(max_length=100, blank=True)
    size = models.PositiveBigIntegerField(default=0)
    fetched_at = models.DateTimeField()
    # The rest of the record as fetched, kept so it can be read again (reprocessing): its
    # structured fields (CMDB, Jira) and when the source says it was last updated.
    record_fields = models.JSONField(default=dict, blank=True)
    record_updated_at = models.DateTimeField(null=True, blank=True)
    # A version of its item's history (a row of a history export) is in effect from this
    # instant until the item's next version; null for an artifact's plain revision.
    version_from = models.DateTimeField(null=True, blank=True)
    # Where in what was fetched the record was read ("line 3"), for its citation.
    location = models.CharField(max_length=100, blank=True)
    status = models.CharField(max_length=20, choices=EpisodeStatus.choices)
    failure_reason = models.TextField(blank=True)
    claims_count = models.PositiveIntegerField(default=0)
    # What read it (`curation.ports.Extractor.version` of the source's extractors);
    # "" when it was stored before versions were recorded.
    extractor_version = models.CharField(max_length=500, blank=True)

    class Meta:
        constraints = [
            # Content-hash idempotency: the same bytes of the same artifact are one episode.
            models.UniqueConstraint(
                fields=["source", "external_id", "content_hash"], name="episode_once_per_content"
            ),
            models.CheckConstraint(
                condition=Q(content_hash__regex=r"^[0-9a-f]{64}$"), name="episode_hash_sha256"
            ),
        ]
        indexes = [models.Index(fields=["source", "external_id"], name="episode_artifact_idx")]
        triggers = [
            pgtrigger.Protect(
                name="episode_content_immutable",
                operation=pgtrigger.Update,
                condition=pgtrigger.AnyChange(
                    *[f if f != "source" else "source_id" for f in EPISODE_CONTENT_FIELDS]
                ),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.external_id} @ {self.content_hash[:8]}"


class Entity(models.Model):
    """A canonical thing claims are about; merges are reversible (merged_into)."""

    group_id = models.CharField(max_length=40)
    canonical_name = models.CharField(max_length=300)
    entity_type = models.CharField(max_length=50, default="thing")
    merged_into = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="merged"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "entities"
        indexes = [models.Index(fields=["group_id", "canonical_name"], name="entity_name_idx")]

    def __str__(self) -> str:
        return self.canonical_name


class EntityAlias(models.Model):
    """A surface form of an entity; alias_norm is written by normalize_name()."""

    group_id = models.CharField(max_length=40)
    entity = models.ForeignKey(Entity, on_delete=models.CASCADE, related_name="aliases")
    alias = models.CharField(max_length=300)
    alias_norm = models.CharField(max_length=300)
    # Name embedding for the semantic resolution step; its model is recorded beside it
    # so vectors of different models are never compared.
    embedding = VectorField(null=True, blank=True)
    embedding_model = models.CharField(max_length=100, blank=True)
    # How this surface form was linked to its entity (new, exact, fuzzy, semantic, judge,
    # review) and the similarity that linked it: automatic links can be audited and undone.
    method = models.CharField(max_length=20, blank=True)
    score = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = "entity aliases"
        constraints = [
            models.UniqueConstraint(fields=["group_id", "alias_norm"], name="alias_once_per_group")
        ]
        # GiST, not GIN: fuzzy resolution asks for the nearest alias by trigram distance
        # (ORDER BY <-> LIMIT 1), which only GiST answers from the index. The workspace
        # leads (btree_gist), so the scan stays inside the workspace asked about however
        # many aliases other tenants have; so do the name-part lookups of understanding.
        indexes = [
            GistIndex(
                fields=["group_id", "alias_norm"],
                opclasses=["gist_text_ops", "gist_trgm_ops"],
                name="alias_group_trgm_gist",
            )
        ]

    def __str__(self) -> str:
        return self.alias


class EntityIdentity(models.Model):
    """An entity's id in a structured source (a CMDB item's id, a Jira key): who it is,
    whatever its name says now. One entity per (source, id); an entity may hold several."""

    group_id = models.CharField(max_length=40)
    entity = models.ForeignKey(Entity, on_delete=models.CASCADE, related_name="identities")
    # PROTECT: erasing a source removes its identities explicitly (they name its records).
    source = models.ForeignKey(Source, on_delete=models.PROTECT, related_name="identities")
    external_id = models.CharField(max_length=500)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "entity identities"
        constraints = [
            models.UniqueConstraint(
                fields=["group_id", "source", "external_id"], name="entity_identity_once"
            )
        ]
        indexes = [models.Index(fields=["entity", "source"], name="entity_identity_entity_idx")]

    def __str__(self) -> str:
        return f"{self.external_id} in source {self.source_id}"


class MergeCandidate(models.Model):
    """Two entities that might be one, waiting for a reviewer (or a judge)."""

    class Status(models.TextChoices):
        OPEN = "open"
        MERGED = "merged"
        KEPT_APART = "kept_apart"

    group_id = models.CharField(max_length=40)
    entity = models.ForeignKey(Entity, on_delete=models.CASCADE, related_name="+")
    candidate = models.ForeignKey(Entity, on_delete=models.CASCADE, related_name="+")
    method = models.CharField(max_length=20)
    score = models.FloatField()
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.OPEN)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["entity", "candidate"], name="merge_candidate_once"),
            models.CheckConstraint(condition=~Q(entity=F("candidate")), name="merge_not_self"),
        ]

    def __str__(self) -> str:
        return f"{self.entity_id} ~ {self.candidate_id} ({self.method} {self.score:.2f})"


class Claim(models.Model):
    """(subject, PREDICATE, object) with its grade, lifecycle and valid time."""

    group_id = models.CharField(max_length=40)
    source = models.ForeignKey(Source, on_delete=models.PROTECT, related_name="claims")
    subject = models.ForeignKey(Entity, on_delete=models.PROTECT, related_name="claims")
    predicate = models.CharField(max_length=100)
    object_entity = models.ForeignKey(
        Entity, null=True, blank=True, on_delete=models.PROTECT, related_name="object_of"
    )
    # NULL when the object is an entity; "" is a legitimate (empty) literal value.
    object_literal = models.TextField(null=True, blank=True)  # noqa: DJ001
    # "e:<entity id>" or "l:<normalised literal>": what counts as the same value.
    object_key = models.CharField(max_length=300)
    fact_text = models.TextField()
    confidence = models.FloatField()
    verification = models.CharField(max_length=20, choices=_choices(Verification))
    tier = models.PositiveSmallIntegerField()
    authority = models.FloatField()
    status = models.CharField(max_length=20, choices=_choices(ClaimStatus), db_index=True)
    status_reason = models.CharField(max_length=200, blank=True)
    valid_from = models.DateTimeField()
    valid_to = models.DateTimeField(null=True, blank=True)
    recorded_at = models.DateTimeField(auto_now_add=True)
    superseded_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="supersedes"
    )
    version = models.PositiveIntegerField(default=1)
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    reviewed_at = models.DateTimeField(null=True, blank=True)
    # Why a reviewer should look at this published claim again ("" when nothing asks):
    # set when reprocessing no longer finds a reviewed claim in its document.
    recheck = models.CharField(max_length=200, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(object_entity__isnull=False, object_literal__isnull=True)
                | Q(object_entity__isnull=True, object_literal__isnull=False),
                name="claim_one_object",
            ),
            models.CheckConstraint(
                condition=Q(predicate__regex=PREDICATE_PATTERN.pattern), name="claim_upper_snake"
            ),
            models.CheckConstraint(
                condition=Q(confidence__gte=0, confidence__lte=1), name="claim_confidence_unit"
            ),
            models.CheckConstraint(
                condition=Q(valid_to__isnull=True) | Q(valid_to__gte=F("valid_from")),
                name="claim_valid_interval",
            ),
            models.CheckConstraint(
                condition=Q(status__in=[s.value for s in ClaimStatus]), name="claim_status_known"
            ),
        ]
        # Only the lifecycle's transitions (curation.domain.lifecycle), whoever writes;
        # and only its service writes them (curation.services.lifecycle turns the
        # transaction-local `vera.lifecycle` on for the length of each of its calls):
        # the guarded columns of a stored claim, and any new claim that is born
        # published or superseded (a publication must supersede what it replaces).
        triggers = [
            pgtrigger.FSM(
                name="claim_status_transitions", field="status", transitions=transitions()
            ),
            pgtrigger.Trigger(
                name="claim_lifecycle_writer",
                when=pgtrigger.Before,
                operation=pgtrigger.Update,
                condition=pgtrigger.Condition(
                    "((OLD.status IS DISTINCT FROM NEW.status"
                    " OR OLD.valid_from IS DISTINCT FROM NEW.valid_from"
                    " OR OLD.valid_to IS DISTINCT FROM NEW.valid_to"
                    " OR OLD.superseded_by_id IS DISTINCT FROM NEW.superseded_by_id"
                    " OR OLD.version IS DISTINCT FROM NEW.version)"
                    " AND current_setting('vera.lifecycle', true) IS DISTINCT FROM 'on')"
                ),
                func=(
                    "RAISE EXCEPTION 'claim %: status, validity, supersession and version are"
                    " written by curation.services.lifecycle only', OLD.id"
                    " USING ERRCODE = 'restrict_violation'; RETURN NEW;"
                ),
            ),
            pgtrigger.Trigger(
                name="claim_lifecycle_inserter",
                when=pgtrigger.Before,
                operation=pgtrigger.Insert,
                condition=pgtrigger.Condition(
                    f"(NEW.status IN ('{ClaimStatus.PUBLISHED.value}',"
                    f" '{ClaimStatus.SUPERSEDED.value}')"
                    " AND current_setting('vera.lifecycle', true) IS DISTINCT FROM 'on')"
                ),
                func=(
                    "RAISE EXCEPTION 'a claim is published (or superseded) by"
                    " curation.services.lifecycle only, never inserted so: % % of group %',"
                    " NEW.status, NEW.predicate, NEW.group_id"
                    " USING ERRCODE = 'restrict_violation'; RETURN NEW;"
                ),
            ),
        ]
        indexes = [
            models.Index(fields=["subject", "predicate", "status"], name="claim_current_idx"),
            # The predicates an entity is the object of, one probe each (understanding
            # reads them of a value a question names, however many claims point at it).
            models.Index(fields=["object_entity", "predicate", "status"], name="claim_object_idx"),
            models.Index(fields=["group_id", "status"], name="claim_group_status_idx"),
            # Review queues page through a status in recorded order; LIMIT stops early.
            models.Index(fields=["status", "recorded_at", "id"], name="claim_queue_order_idx"),
            # The re-check queue: the few claims that ask for one, found without a scan.
            models.Index(
                fields=["group_id", "recorded_at", "id"],
                condition=~Q(recheck=""),
                name="claim_recheck_idx",
            ),
        ]

    def __str__(self) -> str:
        obj = self.object_literal if self.object_literal is not None else self.object_entity
        return f"{self.subject} {self.predicate} {obj}"


class Evidence(models.Model):
    """Where a claim is said: a span of an episode's text (the citation)."""

    group_id = models.CharField(max_length=40)
    claim = models.ForeignKey(Claim, on_delete=models.CASCADE, related_name="evidence")
    episode = models.ForeignKey(Episode, on_delete=models.PROTECT, related_name="evidence")
    start = models.PositiveIntegerField(null=True, blank=True)
    end = models.PositiveIntegerField(null=True, blank=True)
    snippet = models.TextField(blank=True)

    class Meta:
        verbose_name_plural = "evidence"
        constraints = [
            models.UniqueConstraint(fields=["claim", "episode"], name="evidence_once_per_episode")
        ]
        # What is cited just before or after a span of an episode (a turn's context).
        indexes = [models.Index(fields=["episode", "start"], name="evidence_episode_start_idx")]

    def __str__(self) -> str:
        return f"claim {self.claim_id} in episode {self.episode_id}"


class OutboxJob(models.Model):
    """Post-commit work for one consumer (graph or index), written in the same transaction."""

    class Status(models.TextChoices):
        PENDING = "pending"
        DONE = "done"
        DEAD = "dead"

    group_id = models.CharField(max_length=40)
    consumer = models.CharField(max_length=20, choices=[(c.value, c.value) for c in Consumer])
    priority = models.PositiveSmallIntegerField(default=Priority.BULK)
    kind = models.CharField(max_length=50)
    payload = models.JSONField(default=dict)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    available_at = models.DateTimeField()
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    done_at = models.DateTimeField(null=True, blank=True)
    # The W3C trace context (`traceparent`) of the transaction that wrote the job, when
    # tracing is on: the worker's span of the job links back to what caused it.
    trace_context = models.JSONField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(consumer__in=[c.value for c in Consumer]), name="outbox_consumer_known"
            ),
        ]
        indexes = [
            # Each consumer takes its due jobs most urgent first: decisions before bulk.
            # The id completes the lease's order, so jobs created together (one
            # available_at) are read in index order, not all sorted to take the first few.
            models.Index(
                fields=["consumer", "priority", "available_at", "id"],
                condition=Q(status="pending"),
                name="outbox_pending_idx",
            ),
            # Dead letters are counted per consumer for every metrics scrape; done jobs
            # stay in the table, so a count without this index would scan all of them.
            models.Index(fields=["consumer"], condition=Q(status="dead"), name="outbox_dead_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk} for {self.consumer} ({self.status})"


class Tombstone(models.Model):
    """What remains of an erased source or episode: who, when, why and how much; no content.

    `cleanup` holds what the erasure must still remove outside Postgres (object keys,
    embedding-cache keys, claim ids for the graph) and `fingerprints` the SHA-256 of each
    erased text, so a residual scan can look for the content without keeping it.
    """

    class Status(models.TextChoices):
        CLEANING = "cleaning"  # Postgres is done; the graph, store and caches not yet
        COMPLETE = "complete"  # every store cleaned (a residual scan proves it)
        RETRYING = "retrying"  # a store refused; the worker tries again with backoff
        FAILED = "failed"  # the cleanup job gave up: retry it from the admin (Outbox jobs)

    group_id = models.CharField(max_length=40)
    kind = models.CharField(max_length=20)  # "source" | "episode"
    target_id = models.BigIntegerField()
    actor = models.CharField(max_length=200)
    reason = models.CharField(max_length=500)
    counts = models.JSONField(default=dict)
    cleanup = models.JSONField(default=dict)
    fingerprints = models.JSONField(default=list)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.CLEANING)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"erased {self.kind} {self.target_id} ({self.status})"


class OutboxPause(models.Model):
    """One consumer holds off one group's jobs (a rebuild of that group is running).

    Jobs keep arriving and wait, untouched; when the pause is lifted the consumer
    catches up, and each job re-reads the record, so what it writes is current.
    """

    group_id = models.CharField(max_length=40)
    consumer = models.CharField(max_length=20, choices=[(c.value, c.value) for c in Consumer])
    reason = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["consumer", "group_id"], name="outbox_pause_once")
        ]

    def __str__(self) -> str:
        return f"{self.consumer} paused for {self.group_id}: {self.reason}"


class Predicate(models.Model):
    """A workspace's own sense of one predicate; it takes the place of the default's.

    Written only by `ontology_predicate_set` / `ontology_predicate_reset` (admins,
    audited), which also keep each version whole in OntologyRevision.
    """

    group_id = models.CharField(max_length=40)
    name = models.CharField(max_length=MAX_NAME)
    label = models.CharField(max_length=MAX_TEXT)
    description = models.TextField(blank=True)
    words = ArrayField(models.CharField(max_length=MAX_TEXT), default=list, blank=True)
    # Question forms, with X for the entity asked about ("where does X run").
    questions = ArrayField(models.CharField(max_length=MAX_TEXT), default=list, blank=True)
    object_type = models.CharField(max_length=MAX_OBJECT_TYPE, blank=True)
    functional = models.BooleanField(default=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["group_id", "name"], name="predicate_once_per_group"),
            models.CheckConstraint(
                condition=Q(name__regex=PREDICATE_PATTERN.pattern), name="predicate_upper_snake"
            ),
            models.CheckConstraint(
                condition=Q(words__len__lte=MAX_WORDS, questions__len__lte=MAX_WORDS),
                name="predicate_entries_bounded",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.label})"


class OntologyRevision(models.Model):
    """A workspace's whole ontology as one edit left it, at its version (append-only).

    Version N is the N-th edit of the workspace (0, the defaults, has no row); a
    knowledge snapshot pins the version and reads the senses here back, exactly.
    """

    group_id = models.CharField(max_length=40)
    version = models.PositiveIntegerField()
    # Every sense at this version, defaults included: `ontology_records` of the ontology.
    senses = models.JSONField(default=list)
    action = models.CharField(max_length=10)  # "set" | "reset"
    name = models.CharField(max_length=MAX_NAME)  # the predicate the edit changed
    actor = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            # Also the index the latest version per workspace is read from.
            models.UniqueConstraint(fields=["group_id", "version"], name="ontology_version_once"),
            models.CheckConstraint(condition=Q(version__gte=1), name="ontology_version_positive"),
        ]
        triggers = [
            pgtrigger.Protect(
                name="ontology_revision_append_only",
                operation=pgtrigger.Update | pgtrigger.Delete,
            )
        ]

    def __str__(self) -> str:
        return f"ontology v{self.version} of {self.group_id} ({self.action} {self.name})"


class Reprocessing(models.Model):
    """One run re-reading a source's stored documents through today's extractors.

    Episodes are taken in id order; each batch commits with the run's `cursor` and
    counts, so a crashed run resumes after its last committed batch (`reprocess`
    continues a running run of the source), and an episode already read by the
    current version is skipped: running again changes nothing.
    """

    class Status(models.TextChoices):
        RUNNING = "running"
        FINISHED = "finished"
        FAILED = "failed"

    group_id = models.CharField(max_length=40)
    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="reprocessings")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.RUNNING)
    requested_by = models.CharField(max_length=200)  # the actor's label
    reason = models.CharField(max_length=200, blank=True)
    # Read again even documents read by the current version (a rerun on purpose).
    everything = models.BooleanField(default=False)
    version = models.CharField(max_length=500)  # the extraction version applied
    total = models.PositiveIntegerField(default=0)  # documents to read, counted at the start
    cursor = models.BigIntegerField(default=0)  # the last episode id committed
    counts = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    started_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            # One running run per source: a second request joins (or resumes) it.
            models.UniqueConstraint(
                fields=["source"], condition=Q(status="running"), name="reprocessing_one_running"
            ),
        ]
        indexes = [models.Index(fields=["group_id", "-started_at"], name="reprocessing_recent")]

    def __str__(self) -> str:
        return f"reprocessing of source {self.source_id} ({self.status})"
