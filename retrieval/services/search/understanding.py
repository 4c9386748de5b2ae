"""Query understanding against a workspace: its entities, its ontology, its embedder.

The pure rules are `retrieval.domain.understanding`; here the candidate spans are looked
up among the entity aliases the caller may see (row-level security applies: one query),
the mentioned entities are followed through merges to the names the index files their
claims under, the ontologies of the workspaces they belong to are read, and, when the
search embedded the question, the relation's score takes the embedding's preference
too: the question's vector against each predicate's question forms, embedded once per
model and ontology version by the same query embedder.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from django.db.models import Manager, Q, QuerySet

from common.reads import read_connection
from curation.domain.ontology import DEFAULT_ONTOLOGY, ENTITY_SLOT, Ontology
from curation.domain.sources import ConnectorKind
from curation.domain.tiers import ClaimStatus
from curation.models import Entity, EntityAlias, Source
from curation.ports import Embedder
from curation.selectors import ontologies_for
from curation.services.entities import canonical
from retrieval.domain import understanding as rules
from retrieval.domain.understanding import Understanding
from tenants import rls

OntologyReader = Callable[[Iterable[str]], Mapping[str, Ontology]]
_FORMS_CACHE: dict[tuple[str, str, tuple[str, ...]], np.ndarray] = {}
_FORMS_LOCK = threading.Lock()
MAX_FORM_CACHE = 4096  # (model, predicate, its forms) entries kept per process


def default_ontologies(groups: Iterable[str]) -> Mapping[str, Ontology]:
    """The workspaces' ontologies: their own edits over the defaults (one query)."""
    return ontologies_for(groups)


# What understanding reads of an alias and its entity (not the alias's vector).
_ALIAS_FIELDS = ("alias_norm", "entity__group_id", "entity__canonical_name",
                 "entity__merged_into_id", "entity__entity_type")  # fmt: skip


def _mentions(text: str) -> tuple[list[rules.Span], dict[str, list[Entity]], bool]:
    """The question's mentions of visible entities, the entities each names, and whether
    they are only parts of names: whole names and aliases; when it names none so, a
    capitalised word that is one word of a few names ("Dubois" for "Noah Dubois"; "Chen"
    for two people, both kept)."""
    spans = rules.candidate_spans(text)
    if not spans:
        return [], {}, False
    found: dict[str, list[Entity]] = {}
    rows = _visible(EntityAlias.objects).filter(alias_norm__in={span.norm for span in spans})
    for alias in rows.select_related("entity").only(*_ALIAS_FIELDS):
        found.setdefault(alias.alias_norm, []).append(alias.entity)
    chosen = rules.choose_mentions(spans, set(found))
    if chosen:
        return chosen, found, False
    for span in rules.name_parts(text, set())[: rules.MAX_PARTS]:
        entities = _named_in_part(span.norm)
        if entities:
            found[span.norm] = entities
            chosen.append(span)
    return sorted(chosen, key=lambda span: span.start), found, bool(chosen)


def _visible(aliases: Manager[EntityAlias]) -> QuerySet[EntityAlias]:
    """The aliases of the groups the caller sees, named in the query: the index on
    (group, alias) answers, however many aliases other tenants have (row-level security
    alone leaves the planner blind to how few rows are the caller's)."""
    return aliases.filter(group_id__in=sorted(rls.visible_groups()))


def _named_in_part(word: str) -> list[Entity]:
    """The entities (at most `rules.MAX_PART_ENTITIES`) one of whose names has `word` as
    a whole word; none when more do (the word names nobody in particular). The trigram
    index on aliases answers the pattern."""
    pattern = Q(alias_norm__startswith=f"{word} ") | Q(alias_norm__endswith=f" {word}")
    pattern |= Q(alias_norm__contains=f" {word} ")
    rows = (
        _visible(EntityAlias.objects).filter(pattern).select_related("entity").only(*_ALIAS_FIELDS)
    )
    entities: dict[int, Entity] = {}
    for alias in rows[: rules.MAX_PART_ENTITIES * 8]:
        survivor = canonical(alias.entity)
        entities.setdefault(survivor.pk, survivor)
        if len(entities) > rules.MAX_PART_ENTITIES:
            return []
    return list(entities.values())


def understand(
    query_text: str, *, ontologies: OntologyReader = default_ontologies
) -> Understanding:
    """What the question names, asks and states, read from its words alone."""
    as_of, time_text = rules.stated_time(query_text)
    mentions, entities, partial = _mentions(query_text)
    survivors = {span: _survivors(entities[span.norm]) for span in mentions}
    values = _values(survivors) if len(mentions) > 1 else {}
    subjects = [span for span in mentions if span not in values]
    names: dict[str, None] = {}
    groups: dict[str, None] = {}
    for span in subjects:
        for survivor in survivors[span]:
            names[survivor.canonical_name] = None
            groups[survivor.group_id] = None
    ontology = merged(ontologies(list(groups)).values()) if groups else DEFAULT_ONTOLOGY
    named = [survivor for span in subjects for survivor in survivors[span]]
    question = rules.masked(query_text, subjects)
    facts = _had({entity.pk for entity in named}, list(groups), as_of)
    members = facts.members
    # "who reports to X" asks X's relation backwards, when X is the object of facts;
    # so does any question about a thing that is only ever an object ("ACME products").
    backwards = rules.asks_inversely(question) or any(
        rules.names_its_subjects(question, _label(ontology, predicate))
        for predicate in facts.incoming
    )
    inverse = bool(facts.incoming) and (backwards or not facts.outgoing)
    side = facts.incoming if inverse else facts.outgoing or facts.incoming
    kinds = {predicate: frozenset({rules.ENTITY}) for predicate in side} if inverse else facts.kinds
    ontology = rules.grounded(ontology, {p: facts.words.get(p, []) for p in side})
    hints = rules.value_hints(values.values())
    scores = rules.relation_scores(question, ontology, values=hints, kinds=kinds)
    asked = rules.asked_relation(scores) if names else ()
    if partial and not asked:
        # A word that is only part of a name is weak evidence: it names someone when the
        # question also asks a relation that person has ("where is Chen based"), not in
        # any sentence that happens to hold a capitalised word.
        return Understanding(
            as_of=as_of, time_text=time_text, question=query_text,
            time_fallback=rules.time_as_topic(as_of, time_text, [], changed=False, then=False),
        )  # fmt: skip
    return Understanding(
        entities=tuple(names),
        groups=tuple(groups),
        mentions=tuple(" ".join(rules.words(query_text)[s.start : s.end]) for s in subjects),
        values=hints,
        predicates=asked,
        inverse=inverse,
        objects=tuple(sorted(members)) if inverse else (),
        ambiguous=tuple(
            " ".join(rules.words(query_text)[s.start : s.end])
            for s in subjects
            if len(survivors[s]) > 1
        ),
        answer=rules.answer_kind(question),
        time_fallback=rules.time_as_topic(
            as_of, time_text, list(names), changed=facts.changed, then=facts.then
        ),
        kinds=kinds,
        as_of=as_of,
        time_text=time_text,
        scores=_best(scores),
        question=question,
        ontology=ontology,
    )


def _label(ontology: Ontology, predicate: str) -> str:
    """How the predicate is said: its sense's label, else the one read from its name."""
    sense = ontology.get(predicate)
    return sense.label if sense is not None else " ".join(predicate.lower().split("_"))


def _survivors(found: Iterable[Entity]) -> list[Entity]:
    """The entities these aliases name, followed through merges, each once."""
    out: dict[int, Entity] = {}
    for entity in found:
        survivor = canonical(entity)
        out.setdefault(survivor.pk, survivor)
    return list(out.values())


# The lifecycles of facts an entity has or had: a relation with history answers "as of".
_EVER = (ClaimStatus.PUBLISHED, ClaimStatus.SUPERSEDED)


@dataclass(frozen=True)
class Facts:
    """What the mentioned entities have facts of: the predicates they are the subject of
    (`outgoing`) and the object of (`incoming`), the kinds of value each outgoing one
    has, the columns a CMDB source maps onto each (its words, when no sense says), and
    the ids their claims are filed under (`members`: theirs and what merged into them)."""

    outgoing: tuple[str, ...] = ()
    incoming: tuple[str, ...] = ()
    kinds: Mapping[str, frozenset[str]] = field(default_factory=dict)
    words: Mapping[str, list[str]] = field(default_factory=dict)
    members: frozenset[int] = frozenset()
    changed: bool = False  # some fact of theirs has ended: they have a history
    then: bool = False  # some fact of theirs was valid at the time asked about


# `incoming`: the distinct predicates of the claims each entity of `members` is the
# object of (status among `statuses`), one index probe per predicate (a loose scan of
# `claim_object_idx`): a value such as a region is the object of a share of every claim,
# and reading them all to list a few predicates grew with the table, not the answer.
_INCOMING = """
    incoming(id, predicate) AS (
        SELECT m.id, (SELECT c.predicate FROM curation_claim c
                      WHERE c.object_entity_id = m.id AND c.status = ANY(%(statuses)s)
                      ORDER BY c.predicate LIMIT 1)
        FROM members m
        UNION ALL
        SELECT i.id, (SELECT c.predicate FROM curation_claim c
                      WHERE c.object_entity_id = i.id AND c.predicate > i.predicate
                        AND c.status = ANY(%(statuses)s)
                      ORDER BY c.predicate LIMIT 1)
        FROM incoming i WHERE i.predicate IS NOT NULL
    )
"""

# In one round trip (every search that names an entity runs it): the entities and all
# merged into them, however deep; one value of each predicate they are the subject of
# (its kind is read from it); the predicates they are the object of. Indexed on the
# claims' subject and object; row-level security applies as to any query.
_FACTS_SQL = (
    """
    WITH RECURSIVE members(id) AS (
        SELECT unnest(%(ids)s::bigint[])
        UNION
        SELECT e.id FROM curation_entity e JOIN members m ON e.merged_into_id = m.id
    ),
    outgoing AS (
        SELECT DISTINCT ON (c.predicate) c.predicate, c.object_entity_id, c.object_literal
        FROM curation_claim c
        WHERE c.subject_id IN (SELECT id FROM members) AND c.status = ANY(%(ever)s)
        ORDER BY c.predicate, c.id DESC
    ),"""  # noqa: S608 - fixed fragments; values are parameters
    + _INCOMING
    + """
    SELECT 'out', predicate, object_entity_id, object_literal FROM outgoing
    UNION ALL
    SELECT DISTINCT 'in', predicate, NULL::bigint, NULL FROM incoming WHERE predicate IS NOT NULL
    UNION ALL
    SELECT 'member', NULL, id, NULL FROM members
    UNION ALL
    SELECT 'changed', NULL, NULL, NULL WHERE EXISTS (
        SELECT 1 FROM curation_claim c WHERE c.subject_id IN (SELECT id FROM members)
        AND c.status = ANY(%(ever)s) AND c.valid_to IS NOT NULL)
    UNION ALL
    SELECT 'then', NULL, NULL, NULL WHERE EXISTS (
        SELECT 1 FROM curation_claim c WHERE c.subject_id IN (SELECT id FROM members)
        AND c.status = ANY(%(ever)s) AND c.valid_from <= %(at)s
        AND (c.valid_to IS NULL OR c.valid_to > %(at)s))
"""
)


def _had(entity_ids: set[int], groups: list[str], at: dt.datetime | None = None) -> Facts:
    """The entities' facts as `Facts` (two queries, under row-level security); `then`
    answers for the time `at` (None: never)."""
    if not entity_ids:
        return Facts()
    kinds: dict[str, frozenset[str]] = {}
    incoming: list[str] = []
    members: set[int] = set()
    ever = [str(s) for s in _EVER]
    params: dict[str, Any] = {"ids": sorted(entity_ids), "ever": ever, "statuses": ever, "at": at}
    with read_connection().cursor() as cursor:
        cursor.execute(_FACTS_SQL, params)
        rows = cursor.fetchall()
    sides = {row[0] for row in rows}
    for side, predicate, object_id, literal in rows:
        if side == "out":
            kind = rules.value_kind(literal, named=object_id is not None)
            kinds[predicate] = frozenset({kind})
        elif side == "in":
            incoming.append(predicate)
        elif side == "member":
            members.add(object_id)
    words = mapped_columns(groups, {*kinds, *incoming})
    return Facts(
        outgoing=tuple(kinds), incoming=tuple(incoming), kinds=kinds, words=words,
        members=frozenset(members), changed="changed" in sides,
        then=at is not None and "then" in sides,
    )  # fmt: skip


def mapped_columns(groups: Iterable[str], predicates: Iterable[str]) -> dict[str, list[str]]:
    """Each predicate's columns a CMDB source of these workspaces maps onto it (one
    query): the words its data was named by, for a predicate no sense describes."""
    words: dict[str, list[str]] = {predicate: [] for predicate in predicates}
    configs = Source.objects.filter(group_id__in=list(groups), kind=ConnectorKind.CMDB).values_list(
        "config", flat=True
    )
    for config in configs:
        mapping = config.get("mapping") if isinstance(config, dict) else None
        for column, predicate in (mapping or {}).items():
            if predicate in words and isinstance(column, str) and column not in words[predicate]:
                words[predicate].append(column)
    return words


# At most this many claims of one predicate are counted for a value named in a question:
# the shares `value_hints` reads are exact below it, and the count stays bounded however
# many claims the value is the object of (a region of a million-claim workspace).
VALUE_SAMPLE = 1000

# The named entities no visible published claim has as its subject, each predicate they
# are the object of, and how many such claims (up to `VALUE_SAMPLE`): one round trip.
_VALUES_SQL = (
    """
    WITH RECURSIVE members(id) AS (
        SELECT e.id FROM unnest(%(ids)s::bigint[]) e(id)
        WHERE NOT EXISTS (SELECT 1 FROM curation_claim c
                          WHERE c.subject_id = e.id AND c.status = ANY(%(statuses)s))
    ),"""  # noqa: S608 - fixed fragments; values are parameters
    + _INCOMING
    + """
    SELECT i.id, i.predicate, (
        SELECT count(*) FROM (
            SELECT 1 FROM curation_claim c
            WHERE c.object_entity_id = i.id AND c.predicate = i.predicate
              AND c.status = ANY(%(statuses)s)
            LIMIT %(sample)s) s)
    FROM incoming i WHERE i.predicate IS NOT NULL
"""
)


def _values(survivors: Mapping[rules.Span, list[Entity]]) -> dict[rules.Span, dict[str, int]]:
    """The mentions that name a value rather than a subject ("is X in *production*"): the
    entities only ever the object of visible published claims, with how many of each
    predicate they are the object of, up to `VALUE_SAMPLE` (one query, under row-level
    security)."""
    ids = sorted({entity.pk for entities in survivors.values() for entity in entities})
    published = [str(ClaimStatus.PUBLISHED)]
    params: dict[str, Any] = {"ids": ids, "statuses": published, "sample": VALUE_SAMPLE}
    with read_connection().cursor() as cursor:
        cursor.execute(_VALUES_SQL, params)
        rows = cursor.fetchall()
    counts: dict[int, dict[str, int]] = {}
    for entity_id, predicate, n in rows:
        counts.setdefault(entity_id, {})[predicate] = n
    values: dict[rules.Span, dict[str, int]] = {}
    for span, entities in survivors.items():
        if entities and all(entity.pk in counts for entity in entities):
            values[span] = {}
            for entity in entities:
                for predicate, n in counts[entity.pk].items():
                    values[span][predicate] = values[span].get(predicate, 0) + n
    if len(values) == len(survivors):  # nothing left to ask about: no mention is a value
        return {}
    return values


def merged(ontologies: Iterable[Ontology]) -> Ontology:
    """One ontology for a question over several workspaces: every sense any of them has."""
    chosen = list(ontologies)
    if not chosen:
        return DEFAULT_ONTOLOGY
    first, *rest = chosen
    for other in rest:
        first = first.overridden(other.senses.values(), version=max(first.version, other.version))
    return first


def with_meaning(
    found: Understanding, vector: Sequence[float], embedder: Embedder
) -> Understanding:
    """The relation scored again with the embedding's preference (question vs. forms)."""
    if not found.entities or found.ontology is None:
        return found
    forms = _form_vectors(found.ontology, embedder)
    query = np.asarray(vector, dtype=np.float32)
    length = float(np.linalg.norm(query))
    if not forms or length == 0.0:
        return found
    semantic = {name: float((rows @ query).max()) / length for name, rows in forms.items()}
    scores = rules.relation_scores(
        found.question, found.ontology, semantic=semantic, values=found.values,
        kinds=found.kinds,
    )  # fmt: skip
    return replace(found, predicates=rules.asked_relation(scores), scores=_best(scores))


def _form_vectors(ontology: Ontology, embedder: Embedder) -> dict[str, np.ndarray]:
    """Each predicate's question forms embedded by the query embedder, as unit rows (one
    matrix product gives their cosines with a question), cached per process by model,
    predicate and forms: a question's grounded senses are any subset of a workspace's."""
    built: dict[str, np.ndarray] = {}
    missing: list[tuple[str, tuple[str, ...]]] = []
    with _FORMS_LOCK:
        for name, sense in ontology.senses.items():
            if not sense.questions:
                continue
            cached = _FORMS_CACHE.get((embedder.model, name, sense.questions))
            if cached is None:
                missing.append((name, sense.questions))
            else:
                built[name] = cached
    if not missing:
        return built
    # Each form twice: read with "it" for the slot, and without it as questions are read
    # (`rules.spoken`); a question's relation is its best cosine with either.
    names = [name for name, questions in missing for _ in questions * 2]
    texts = [
        text
        for _, questions in missing
        for form in questions
        for text in (form.replace(ENTITY_SLOT, "it"), rules.spoken(form))
    ]
    rows: dict[str, list[list[float]]] = {}
    for name, vector in zip(names, embedder.embed(texts), strict=True):
        rows.setdefault(name, []).append(list(vector))
    with _FORMS_LOCK:
        for name, questions in missing:
            if len(_FORMS_CACHE) >= MAX_FORM_CACHE:
                _FORMS_CACHE.pop(next(iter(_FORMS_CACHE)))
            built[name] = _FORMS_CACHE[(embedder.model, name, questions)] = _unit_rows(rows[name])
    return built


def _unit_rows(vectors: list[list[float]]) -> np.ndarray:
    matrix = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0.0, 1.0, norms)


def _best(scores: Mapping[str, float], *, keep: int = 3) -> dict[str, float]:
    """The best few relations' scores, rounded: what the response reports."""
    ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:keep]
    return {name: round(score, 3) for name, score in ranked if score > 0}
