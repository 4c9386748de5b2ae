"""Question words learnt from votes, and an admin's decision on each.

`question_words_learn` reads a workspace's votes on hits in a window (the question, the
hit's fact, helpful or not), asks the pure rules (`retrieval.domain.word_learning`)
which words its people use for which predicate that its ontology does not know, and
keeps them as pending `WordSuggestion`s: a suggestion already decided is never
reopened, a pending one gets its new counts. `word_suggestion_accept` adds the word to
the predicate's sense through the audited ontology edit (`ontology_predicate_set`),
`word_suggestion_dismiss` sets it aside; both need the workspace's admin role and are
audited. No word reaches an ontology any other way.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import replace

from django.db import transaction
from django.utils import timezone

from common.errors import PermissionDenied
from curation.domain.ontology import MAX_WORDS, PredicateSense
from curation.models import Claim
from curation.selectors import ontology_for
from curation.services.ontology import ontology_predicate_set
from retrieval.domain import word_learning as rules
from retrieval.domain.understanding import automatic_sense
from retrieval.models import Feedback, WordSuggestion
from retrieval.services.search.understanding import mapped_columns
from tenants.domain.access import Principal
from tenants.domain.scopes import Role
from tenants.services.audit import audit_record


class SuggestionDecided(ValueError):
    """The suggestion was accepted or dismissed before."""


def question_words_learn(
    *, group_id: str, since: dt.datetime, min_support: int = rules.MIN_SUPPORT
) -> int:
    """Learn the workspace's question words from its votes since `since` (call in a
    context of the workspace); how many suggestions are pending after it."""
    votes = list(
        Feedback.objects.filter(group_id=group_id, hit__created_at__gte=since).values_list(
            "hit__query_text", "claim_id", "helpful"
        )
    )
    claims = {
        claim.pk: claim
        for claim in Claim.objects.filter(pk__in={claim_id for _, claim_id, _ in votes})
        .select_related("subject", "object_entity")
        .only("predicate", "object_literal", "subject__canonical_name",
              "object_entity__canonical_name")
    }  # fmt: skip
    read = [
        rules.Vote(question, claim.predicate, _names(claim), helpful)
        for question, claim_id, helpful in votes
        if (claim := claims.get(claim_id)) is not None
    ]
    predicates = {vote.predicate for vote in read}
    senses = senses_of(group_id, predicates)
    known = {predicate: _known(senses.get(predicate)) for predicate in predicates}
    with transaction.atomic():
        for found in rules.suggestions(read, known, min_support=min_support):
            row, created = WordSuggestion.objects.select_for_update().get_or_create(
                group_id=group_id, predicate=found.predicate, word=found.word,
                defaults={"support": found.support, "against": found.against},
            )  # fmt: skip
            if not created and row.status == WordSuggestion.Status.PENDING:
                row.support, row.against = found.support, found.against
                row.save(update_fields=["support", "against", "updated_at"])
    return WordSuggestion.objects.filter(
        group_id=group_id, status=WordSuggestion.Status.PENDING
    ).count()


def _names(claim: Claim) -> tuple[str, ...]:
    names = [claim.subject.canonical_name]
    if claim.object_entity is not None:
        names.append(claim.object_entity.canonical_name)
    elif claim.object_literal:
        names.append(claim.object_literal)
    return tuple(names)


def senses_of(group_id: str, predicates: Iterable[str]) -> dict[str, PredicateSense]:
    """Each predicate's sense in the workspace as understanding reads it: its ontology's,
    else the one a predicate nobody described gets from its name and mapped columns."""
    ontology = ontology_for(group_id)
    wanted = set(predicates)
    columns = mapped_columns([group_id], wanted - set(ontology.senses))
    senses = {}
    for predicate in wanted:
        sense = ontology.get(predicate) or automatic_sense(predicate, columns.get(predicate, []))
        if sense is not None:
            senses[predicate] = sense
    return senses


def _known(sense: PredicateSense | None) -> list[str]:
    if sense is None:
        return []
    return [sense.label, *sense.words, *sense.questions, sense.object_type]


def word_suggestion_accept(*, actor: Principal, group_id: str, pk: int) -> WordSuggestion:
    """Add the suggested word to its predicate's sense (an audited ontology edit), and
    record the decision. SuggestionDecided when it was decided before; ValueError when the
    sense cannot take another word."""
    _admin_only(actor, group_id)
    with transaction.atomic():
        row = _pending(group_id, pk)
        sense = senses_of(group_id, [row.predicate]).get(row.predicate)
        if sense is None:
            raise ValueError(f"{row.predicate} cannot be described: its name is not a predicate's")
        if len(sense.words) >= MAX_WORDS:
            raise ValueError(f"{row.predicate} already lists {MAX_WORDS} words")
        ontology_predicate_set(
            actor=actor, group_id=group_id, sense=replace(sense, words=(*sense.words, row.word))
        )
        return _decide(actor, row, WordSuggestion.Status.ACCEPTED)


def word_suggestion_dismiss(*, actor: Principal, group_id: str, pk: int) -> WordSuggestion:
    """Set the suggestion aside for good (audited); the ontology is unchanged."""
    _admin_only(actor, group_id)
    with transaction.atomic():
        return _decide(actor, _pending(group_id, pk), WordSuggestion.Status.DISMISSED)


def _admin_only(actor: Principal, group_id: str) -> None:
    if not actor.can(Role.ADMIN, group_id):
        raise PermissionDenied("deciding on question words needs the admin role in this workspace")


def _pending(group_id: str, pk: int) -> WordSuggestion:
    """The suggestion, locked; WordSuggestion.DoesNotExist when the caller cannot see it
    in this workspace, SuggestionDecided when it is not pending."""
    row = WordSuggestion.objects.select_for_update().get(group_id=group_id, pk=pk)
    if row.status != WordSuggestion.Status.PENDING:
        raise SuggestionDecided(f"this suggestion was {row.status} before")
    return row


def _decide(actor: Principal, row: WordSuggestion, status: str) -> WordSuggestion:
    row.status, row.decided_by_id, row.decided_at = status, actor.user_id, timezone.now()
    row.save(update_fields=["status", "decided_by", "decided_at", "updated_at"])
    audit_record(
        actor=actor, group_id=row.group_id, action=f"ontology.word.{status}",
        target=("word_suggestion", row.pk),
        data={"predicate": row.predicate, "word": row.word, "support": row.support,
              "against": row.against},
    )  # fmt: skip
    return row
