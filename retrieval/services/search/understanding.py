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

import math
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace

from curation.domain.ontology import DEFAULT_ONTOLOGY, ENTITY_SLOT, Ontology
from curation.models import Entity, EntityAlias
from curation.ports import Embedder
from curation.selectors import ontologies_for
from curation.services.entities import canonical
from retrieval.domain import understanding as rules
from retrieval.domain.understanding import Understanding

OntologyReader = Callable[[Iterable[str]], Mapping[str, Ontology]]
_FORMS_CACHE: dict[tuple[str, str, int], dict[str, list[list[float]]]] = {}
_FORMS_LOCK = threading.Lock()
MAX_FORM_CACHE = 64  # (model, workspace, version) entries kept per process


def default_ontologies(groups: Iterable[str]) -> Mapping[str, Ontology]:
    """The workspaces' ontologies: their own edits over the defaults (one query)."""
    return ontologies_for(groups)


def _mentions(text: str) -> tuple[list[rules.Span], dict[str, list[Entity]]]:
    """The question's mentions of visible entities, and the entities each names."""
    spans = rules.candidate_spans(text)
    if not spans:
        return [], {}
    found: dict[str, list[Entity]] = {}
    rows = EntityAlias.objects.filter(alias_norm__in={span.norm for span in spans})
    for alias in rows.select_related("entity"):
        found.setdefault(alias.alias_norm, []).append(alias.entity)
    return rules.choose_mentions(spans, set(found)), found


def understand(
    query_text: str, *, ontologies: OntologyReader = default_ontologies
) -> Understanding:
    """What the question names, asks and states, read from its words alone."""
    as_of, time_text = rules.stated_time(query_text)
    mentions, entities = _mentions(query_text)
    names: dict[str, None] = {}
    groups: dict[str, None] = {}
    for span in mentions:
        for entity in entities[span.norm]:
            survivor = canonical(entity)
            names[survivor.canonical_name] = None
            groups[survivor.group_id] = None
    ontology = merged(ontologies(list(groups)).values()) if groups else DEFAULT_ONTOLOGY
    question = rules.masked(query_text, mentions)
    scores = rules.relation_scores(question, ontology)
    return Understanding(
        entities=tuple(names),
        mentions=tuple(" ".join(rules.words(query_text)[s.start : s.end]) for s in mentions),
        predicates=rules.asked_relation(scores) if names else (),
        as_of=as_of,
        time_text=time_text,
        scores=_best(scores),
        question=question,
        ontology=ontology,
    )


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
    semantic = {
        name: max(_cosine(vector, form) for form in vectors)
        for name, vectors in forms.items()
        if vectors
    }
    scores = rules.relation_scores(found.question, found.ontology, semantic=semantic)
    return replace(found, predicates=rules.asked_relation(scores), scores=_best(scores))


def _form_vectors(ontology: Ontology, embedder: Embedder) -> dict[str, list[list[float]]]:
    """Each predicate's question forms embedded by the query embedder, cached per process."""
    key = (embedder.model, _identity(ontology), ontology.version)
    with _FORMS_LOCK:
        cached = _FORMS_CACHE.get(key)
    if cached is not None:
        return cached
    names = [name for name, sense in ontology.senses.items() for _ in sense.questions]
    texts = [
        form.replace(ENTITY_SLOT, "it")
        for sense in ontology.senses.values()
        for form in sense.questions
    ]
    vectors = embedder.embed(texts) if texts else []
    built: dict[str, list[list[float]]] = {}
    for name, vector in zip(names, vectors, strict=True):
        built.setdefault(name, []).append(list(vector))
    with _FORMS_LOCK:
        if len(_FORMS_CACHE) >= MAX_FORM_CACHE:
            _FORMS_CACHE.pop(next(iter(_FORMS_CACHE)))
        _FORMS_CACHE[key] = built
    return built


def _identity(ontology: Ontology) -> str:
    """What tells two ontologies of one version apart (workspaces edit independently)."""
    return str(hash(tuple(sorted((n, s.questions) for n, s in ontology.senses.items()))))


def _cosine(first: Sequence[float], second: Sequence[float]) -> float:
    dot = math.fsum(a * b for a, b in zip(first, second, strict=False))
    norm = math.sqrt(math.fsum(a * a for a in first)) * math.sqrt(math.fsum(b * b for b in second))
    return dot / norm if norm else 0.0


def _best(scores: Mapping[str, float], *, keep: int = 3) -> dict[str, float]:
    """The best few relations' scores, rounded: what the response reports."""
    ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:keep]
    return {name: round(score, 3) for name, score in ranked if score > 0}
