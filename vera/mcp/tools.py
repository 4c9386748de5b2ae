"""What each MCP tool does, as plain synchronous functions of a principal and arguments.

Every tool calls the same services and selectors as the REST API (no second read path),
inside `rls.tenant_context(principal)`: row-level security decides what any id or name
reaches. No argument widens it; `scope` may only narrow it to a scope the caller
reads (`tenants.selectors.principal_within`, as the REST `scope=` does). Rate limits
are the REST API's, charged to the same counters per principal.

A refusal is a `ToolError` whose message a model can act on; the server turns it into a
tool result with `is_error`, never a protocol error.
"""

from __future__ import annotations

import datetime as dt
import logging
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.db import close_old_connections
from django.db.models import Q
from django.utils import timezone
from mcp.server.mcpserver.exceptions import ToolError

from common.errors import NotFound, PermissionDenied
from curation import selectors as curation_selectors
from curation import usecases as curation_usecases
from curation.api.serializers import claims_data
from curation.domain.names import normalize_name
from curation.domain.params import parse_related
from curation.domain.validity import EVER_VALID
from curation.models import Claim, Entity, EntityAlias
from curation.usecases import ProposalRefused
from kernel.params import InvalidQuery
from retrieval import usecases
from retrieval.api.serializers import SearchResultSerializer
from retrieval.domain.context import parse_context
from retrieval.domain.query import Query, parse_query
from retrieval.models import SearchHit, Snapshot
from retrieval.usecases import SnapshotRefused, pack_payload
from tenants import replicas, rls
from tenants.domain.access import Principal
from tenants.domain.limits import Budget
from tenants.selectors import principal_within
from vera.mcp.auth import SCOPE_PROPOSE
from vera.throttling import principal_charge

logger = logging.getLogger(__name__)

# "What changed recently" in an entity brief: validity that began or ended this recently.
RECENT = dt.timedelta(days=30)
MAX_NAME = 300


def _errors(error: InvalidQuery) -> str:
    return "; ".join(f"{name}: {message}" for name, message in sorted(error.errors.items()))


def _charge(principal: Principal, budget: Budget) -> None:
    refused = principal_charge(principal, budget)
    if refused is not None:
        detail, retry_after_s = refused
        raise ToolError(f"{detail} Try again in {retry_after_s} s.")


@contextmanager
def _as(principal: Principal, scope: str | None = None) -> Iterator[Principal]:
    """The principal's tenancy for the call, narrowed to `scope` when one is named."""
    acting = principal
    if scope is not None:
        narrowed = principal_within(principal, scope)
        if narrowed is None:
            raise ToolError(f"No such scope visible to you: {scope}.")
        acting = narrowed
    with rls.tenant_context(acting):
        yield acting


@contextmanager
def _reading(principal: Principal) -> Iterator[Principal]:
    """`_as` for a tool that only reads: on a hot standby when one may serve the caller
    (tenants.replicas), as the REST reads are."""
    with _as(principal) as acting, replicas.reading(acting):
        yield acting


def run[T](call: Callable[[], T]) -> T:
    """Run one tool call on this thread's database connection; anything unexpected is
    logged with an id and answered as an error naming only that id."""
    close_old_connections()
    try:
        return call()
    except ToolError:
        raise
    except PermissionDenied as error:
        raise ToolError(str(error)) from None
    except Exception:
        incident = uuid.uuid4().hex[:12]
        logger.exception("MCP tool call failed (incident %s)", incident)
        raise ToolError(f"VERA could not complete this call (incident {incident}).") from None
    finally:
        close_old_connections()


def _query(**params: object) -> Query:
    given = {name: str(value) for name, value in params.items() if value is not None}
    try:
        return parse_query(given)
    except InvalidQuery as error:
        raise ToolError(_errors(error)) from None


def search(
    principal: Principal, *, query: str, k: int, as_of: str | None, scope: str | None
) -> dict[str, Any]:
    """Ranked, cited hits for the question (the REST search, word for word)."""
    parsed = _query(q=query, k=k, as_of=as_of, scope=scope)
    _charge(principal, Budget.SEARCH)
    try:
        searched = usecases.search(principal, parsed)
    except usecases.ScopeNotVisible:
        raise ToolError(f"No such scope visible to you: {scope}.") from None
    return dict(SearchResultSerializer(searched.result).data)


def context(
    principal: Principal,
    *,
    query: str,
    token_budget: int,
    as_of: str | None,
    scope: str | None,
    snapshot: int | None = None,
) -> dict[str, Any]:
    """A context pack: the best cited facts for the question within `token_budget` tokens
    (the REST `GET /api/v1/context`, by the same service)."""
    params = {"q": query, "budget": token_budget, "as_of": as_of, "scope": scope,
              "snapshot": snapshot}  # fmt: skip
    try:
        wanted = parse_context({k: str(v) for k, v in params.items() if v is not None})
    except InvalidQuery as error:
        raise ToolError(_errors(error)) from None
    _charge(principal, Budget.SEARCH)
    try:
        served = usecases.context_pack(principal, wanted)
    except usecases.ScopeNotVisible:
        raise ToolError(f"No such scope visible to you: {scope}.") from None
    except Snapshot.DoesNotExist:
        raise ToolError(f"No snapshot {snapshot} visible to you.") from None
    except SnapshotRefused as error:
        raise ToolError(str(error)) from None
    return pack_payload(served)


def _entity(name_or_id: str) -> Entity:
    """The visible entity with this id, or named so (canonical name or alias); one only."""
    text = name_or_id.strip()
    if not text or len(text) > MAX_NAME:
        raise ToolError(f"Give an entity id or a name of 1 to {MAX_NAME} characters.")
    if text.isdigit():
        found = curation_selectors.entity_visible(entity_id=int(text)) if len(text) < 19 else None
        if found is None:
            raise ToolError(f"No entity {text} visible to you.")
        return found
    norm = normalize_name(text)
    named = Entity.objects.filter(
        Q(canonical_name__iexact=text)
        | Q(pk__in=EntityAlias.objects.filter(alias_norm=norm).values("entity_id"))
    ).order_by("pk")
    survivors = {entity.pk: entity for entity in map(curation_selectors.entity_survivor, named)}
    if not survivors:
        raise ToolError(f"No entity named {text!r} visible to you; try `search` first.")
    if len(survivors) > 1:
        listed = ", ".join(f"{e.pk} ({e.canonical_name}, {e.group_id})" for e in survivors.values())
        raise ToolError(f"Several entities are named {text!r}: {listed}. Ask again with an id.")
    return next(iter(survivors.values()))


def _instant(as_of: str | None) -> dt.datetime | None:
    return _query(q="-", as_of=as_of).as_of


def entity(principal: Principal, *, name_or_id: str, as_of: str | None) -> dict[str, Any]:
    """An entity brief: current facts (or those valid `as_of`), recent changes, aliases,
    neighbours one hop away; every fact with its citations."""
    instant = _instant(as_of)
    with _reading(principal):
        found = _entity(name_or_id)
        view = curation_selectors.entity_view(entity_id=found.pk)
        if view is None:
            raise ToolError(f"No entity {name_or_id} visible to you.")
        members = [view.entity.pk, *(merged.pk for merged in view.merged)]
        about = Q(subject_id__in=members) | Q(object_entity_id__in=members)
        valid = curation_selectors.claims_valid(as_of=instant).filter(about)
        facts = claims_data(valid)
        since = (instant or timezone.now()) - RECENT
        changed = Claim.objects.filter(about).filter(
            Q(valid_from__gte=since)
            | Q(valid_to__gte=since, valid_to__lte=instant or timezone.now())
        )
        recent = claims_data(changed.filter(status__in=sorted(EVER_VALID)))
        neighbours = _related(principal, view.entity, hops=1, as_of=as_of)
    return {
        "entity": {"id": view.entity.pk, "name": view.entity.canonical_name,
                   "type": view.entity.entity_type, "group_id": view.entity.group_id},
        "as_of": instant.isoformat() if instant else None,
        "aliases": view.aliases,
        "facts": [facts[pk] for pk in sorted(facts)],
        "recent_changes": sorted(recent.values(), key=lambda c: (c["valid_from"], c["id"])),
        "neighbours": neighbours["neighbours"],
        "neighbour_claims": neighbours["claims"],
    }  # fmt: skip


def _related(
    principal: Principal, found: Entity, *, hops: int, as_of: str | None
) -> dict[str, Any]:
    params = {"hops": str(hops), **({"as_of": as_of} if as_of else {})}
    try:
        query = parse_related(params)
    except InvalidQuery as error:
        raise ToolError(_errors(error)) from None
    try:
        paths = curation_usecases.entity_related(
            entity=found, principal=principal, query=query, read=claims_data
        )
    except Exception as error:  # the graph is a projection: say so, do not fail the brief
        logger.warning("MCP related: the graph is unavailable (%s)", type(error).__name__)
        raise ToolError("The graph is unavailable right now; `search` still answers.") from None
    hood = curation_selectors.Neighbourhood.of(found, paths)
    return {
        "entity": {"id": found.pk, "name": found.canonical_name},
        "neighbours": [
            {"entity_id": path.entity_id, "name": path.name, "type": path.kind,
             "hops": path.hops, "claim_ids": path.claim_ids}
            for path in hood.neighbours
        ],
        "claims": hood.claims,
    }  # fmt: skip


def related(principal: Principal, *, entity: str, hops: int, as_of: str | None) -> dict[str, Any]:
    """Entities and values within `hops` of the entity, each path's claims cited."""
    with _reading(principal):
        return _related(principal, _entity(entity), hops=hops, as_of=as_of)


def claim_history(principal: Principal, *, claim_id: int) -> dict[str, Any]:
    """Every value the claim's subject and predicate have had, oldest first, cited."""
    with _reading(principal):
        history = curation_selectors.claim_history(claim_id=claim_id)
        if not history:
            raise ToolError(f"No claim {claim_id} visible to you.")
        rows = claims_data(Claim.objects.filter(pk__in=[claim.pk for claim in history]))
    return {"claim_id": claim_id, "history": [rows[claim.pk] for claim in history]}


def propose(
    principal: Principal,
    *,
    token_scopes: list[str],
    subject: str,
    predicate: str,
    object: str,
    evidence: str,
    source_url: str,
    scope: str | None,
) -> dict[str, Any]:
    """A tier-4 proposal in the reviewers' queue, attributed to the caller: never published
    by the call (the contamination guard), searchable only once a reviewer accepts it."""
    if SCOPE_PROPOSE not in token_scopes:
        raise ToolError(f"Proposing needs the {SCOPE_PROPOSE} scope; this token has none.")
    _charge(principal, Budget.WRITE)
    try:
        done = curation_usecases.proposal_record(
            actor=principal, subject=subject, predicate=predicate, object=object, evidence=evidence,
            source_url=source_url, group_id=scope,
        )  # fmt: skip
    except (NotFound, ProposalRefused) as error:
        raise ToolError(str(error)) from None
    claim = done.claim
    # `group_id` is the record's scope, as the REST answer says; `scope` is kept for clients.
    return {"claim_id": claim.pk, "status": claim.status, "scope": claim.group_id,
            "group_id": claim.group_id, "created": done.created,
            "message": done.message}  # fmt: skip


def feedback(principal: Principal, *, hit_id: int, helpful: bool) -> dict[str, Any]:
    """A vote on a hit a search returned to you (it feeds the ranking's calibration)."""
    _charge(principal, Budget.WRITE)
    with _as(principal):
        try:
            vote = usecases.feedback_record(
                hit_id=hit_id, helpful=helpful, user_id=principal.user_id
            )
        except SearchHit.DoesNotExist:
            raise ToolError(f"No hit {hit_id} visible to you.") from None
    return {"hit_id": vote.hit_id, "claim_id": vote.claim_id, "helpful": vote.helpful}
