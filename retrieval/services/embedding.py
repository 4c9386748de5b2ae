"""Which embedding model indexes each workspace, switching it, and catching up after a switch.

A workspace (group) is indexed with one model at a time, recorded in its
`GroupEmbedding` pin. The operator offers models (VERA_EMBEDDER__CHOICES, an allow-list:
a tenant can never name a model, host or file of its own); a workspace admin picks one
of them. A switch takes effect at once for new writes and for queries; the group's
existing documents are re-embedded in the background (`index_catch_up`, a beat task),
and until then the vector half simply does not see them (vectors are compared only
within one model) while full text still finds them.

A workspace may also be searched with a second offered model, its companion: each of
its documents then has a second vector (`CompanionVector`) and its searches fuse a
third list. MiniLM with multilingual e5 as companion measured above either alone on
SciFact (bench.embedders); the price is embedding every text twice.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from common.errors import PermissionDenied
from curation.ports import Embedder
from retrieval.models import CompanionVector, GroupEmbedding, SearchDocument
from retrieval.ports import EmbedderCatalog
from tenants.domain.access import Principal
from tenants.domain.scopes import Role, ScopeKind
from tenants.models import Scope
from tenants.services.audit import audit_record

logger = logging.getLogger(__name__)


class EmbedderUnavailable(Exception):
    """The workspace's model is not offered by this deployment (any more)."""


class SwitchRefused(Exception):
    """A switch that cannot be made as asked; the message says why."""


def pin_provider(pin: GroupEmbedding, catalog: EmbedderCatalog) -> str:
    """The offered provider serving a pin: its own, or (an older pin) the one of its model."""
    if pin.provider:
        if pin.provider not in catalog.choices():
            raise EmbedderUnavailable(
                f"workspace {pin.group_id} is indexed with {pin.provider} ({pin.model}), "
                "which VERA_EMBEDDER__CHOICES does not offer; offer it again, or switch "
                "the workspace to an offered model"
            )
        return pin.provider
    for provider in catalog.choices():
        if catalog.passage(provider).model == pin.model:
            return provider
    raise EmbedderUnavailable(
        f"workspace {pin.group_id} is indexed with {pin.model}, which no offered embedder "
        "produces; switch the workspace to an offered model"
    )


def group_provider(group_id: str, catalog: EmbedderCatalog) -> str:
    """The provider indexing this group: its pin's, or the default for a group without one."""
    pin = GroupEmbedding.objects.filter(group_id=group_id).first()
    return catalog.default if pin is None else pin_provider(pin, catalog)


def group_embedder(group_id: str, catalog: EmbedderCatalog) -> Embedder:
    """The passage embedder for this group's documents."""
    return catalog.passage(group_provider(group_id, catalog))


def visible_providers(
    catalog: EmbedderCatalog, pins: Iterable[GroupEmbedding] | None = None
) -> list[str]:
    """The providers of the groups the tenant context sees (RLS), the default first.

    A search embeds its query once per provider listed here. A pin whose model is no
    longer offered is left out (logged): its documents are found by full text only.
    `pins` are the visible pins when the caller has read them already.
    """
    found: set[str] = set()
    for pin in GroupEmbedding.objects.all() if pins is None else pins:
        try:
            found.add(pin_provider(pin, catalog))
        except EmbedderUnavailable as error:
            logger.warning("vector search skips a workspace: %s", error)
    if not found:
        return [catalog.default]
    return sorted(found, key=lambda p: (p != catalog.default, p))


@dataclass(frozen=True)
class Switch:
    """What a switch did: the models before and after, and how many claims re-embed."""

    group_id: str
    previous: str
    provider: str
    model: str
    to_reembed: int

    @property
    def message(self) -> str:
        if self.previous == self.provider:
            return f"{self.group_id} is already indexed with {self.provider} ({self.model})."
        return (
            f"{self.group_id} now uses {self.provider} ({self.model}) instead of "
            f"{self.previous}; {self.to_reembed} indexed claims are re-embedded in the "
            "background. Until each is, full text still finds it and vector search does not."
        )


@transaction.atomic
def embedding_switch(
    *, actor: Principal, group_id: str, provider: str, catalog: EmbedderCatalog, reason: str
) -> Switch:
    """Index the workspace with another offered model from now on (audited).

    Needs the admin role in the workspace and a reason. Queries and new documents use
    the new model at once; `index_catch_up` re-embeds the existing documents.
    """
    if not actor.can(Role.ADMIN, group_id):
        raise PermissionDenied("changing the embedding model needs the admin role here")
    if not reason.strip():
        raise SwitchRefused("say why the model changes: the reason is kept in the audit log")
    if provider not in catalog.choices():
        raise SwitchRefused(
            f"{provider!r} is not offered here; choose one of {', '.join(catalog.choices())}"
        )
    if not Scope.objects.filter(group_id=group_id, kind=ScopeKind.WORKSPACE).exists():
        raise SwitchRefused(f"{group_id} is not a workspace")
    embedder = catalog.passage(provider)
    pin = GroupEmbedding.objects.select_for_update().filter(group_id=group_id).first()
    previous = catalog.default if pin is None else (pin.provider or pin.model)
    unchanged = pin is not None and (pin.model, pin.dimension) == (
        embedder.model,
        embedder.dimension,
    )
    if unchanged and pin is not None:
        if pin.provider != provider:  # an older pin learns its provider's name
            GroupEmbedding.objects.filter(pk=pin.pk).update(provider=provider)
        return Switch(group_id, provider, provider, embedder.model, 0)
    GroupEmbedding.objects.update_or_create(
        group_id=group_id,
        defaults={
            "provider": provider,
            "model": embedder.model,
            "dimension": embedder.dimension,
            "switched_at": timezone.now(),
        },
    )
    stale = stale_documents(group_id, embedder.model).count()
    audit_record(
        actor=actor,
        group_id=group_id,
        action="embedding.switch",
        target=("groupembedding", group_id),
        data={
            "from": previous,
            "to": provider,
            "model": embedder.model,
            "dimension": embedder.dimension,
            "to_reembed": stale,
            "reason": reason.strip(),
        },
    )
    return Switch(group_id, previous, provider, embedder.model, stale)


def stale_documents(group_id: str, model: str) -> QuerySet[SearchDocument]:
    """The group's index documents embedded with another model than `model`."""
    return SearchDocument.objects.filter(group_id=group_id).exclude(embedding_model=model)


def catch_up_progress(group_id: str) -> tuple[int, int]:
    """(documents still on a previous model, documents in all) for the group."""
    pin = GroupEmbedding.objects.filter(group_id=group_id).first()
    total = SearchDocument.objects.filter(group_id=group_id).count()
    if pin is None:
        return 0, total
    return stale_documents(group_id, pin.model).count(), total


def visible_companions(
    catalog: EmbedderCatalog, pins: Iterable[GroupEmbedding] | None = None
) -> list[str]:
    """The companion providers of the groups the tenant context sees (RLS), offered ones."""
    found = set()
    for pin in GroupEmbedding.objects.exclude(companion="") if pins is None else pins:
        if not pin.companion:
            continue
        if pin.companion in catalog.choices():
            found.add(pin.companion)
        else:
            logger.warning(
                "vector search skips %s's companion %s: not offered", pin.group_id, pin.companion
            )
    return sorted(found)


def search_models(catalog: EmbedderCatalog) -> tuple[list[str], list[str]]:
    """`visible_providers` and `visible_companions` from one read of the visible pins."""
    pins = list(GroupEmbedding.objects.all())
    return visible_providers(catalog, pins), visible_companions(catalog, pins)


def group_companion(group_id: str, catalog: EmbedderCatalog) -> Embedder | None:
    """The passage embedder of the group's companion model, if it has an offered one."""
    pin = GroupEmbedding.objects.filter(group_id=group_id).exclude(companion="").first()
    if pin is None:
        return None
    if pin.companion not in catalog.choices():
        raise EmbedderUnavailable(
            f"workspace {group_id}'s companion model {pin.companion} is not offered by "
            "VERA_EMBEDDER__CHOICES; offer it again, or remove the companion"
        )
    return catalog.passage(pin.companion)


def companion_missing(group_id: str, model: str) -> QuerySet[SearchDocument]:
    """The group's index documents without a vector by the companion `model`."""
    return SearchDocument.objects.filter(group_id=group_id).exclude(companion_vectors__model=model)


@dataclass(frozen=True)
class Companion:
    """What setting a companion did: the model now (None: removed) and what it costs."""

    group_id: str
    provider: str | None
    model: str | None
    to_embed: int
    removed: int

    @property
    def message(self) -> str:
        if self.provider is None:
            return (
                f"{self.group_id} is searched with its own model only; "
                f"{self.removed} companion vectors were deleted."
            )
        return (
            f"{self.group_id} is also searched with {self.provider} ({self.model}); "
            f"{self.to_embed} indexed claims get a second vector in the background. Until "
            "each has, the companion list does not see it."
        )


@transaction.atomic
def embedding_companion(
    *,
    actor: Principal,
    group_id: str,
    provider: str | None,
    catalog: EmbedderCatalog,
    reason: str,
) -> Companion:
    """Search the workspace with a second offered model too, or (None) no more (audited).

    Needs the admin role in the workspace and a reason. New documents get both vectors
    at once; `index_catch_up` embeds the existing ones with the companion. Removing it
    deletes the companion's vectors of the workspace.
    """
    if not actor.can(Role.ADMIN, group_id):
        raise PermissionDenied("changing the embedding models needs the admin role here")
    if not reason.strip():
        raise SwitchRefused("say why the models change: the reason is kept in the audit log")
    if provider is not None and provider not in catalog.choices():
        raise SwitchRefused(
            f"{provider!r} is not offered here; choose one of {', '.join(catalog.choices())}"
        )
    if not Scope.objects.filter(group_id=group_id, kind=ScopeKind.WORKSPACE).exists():
        raise SwitchRefused(f"{group_id} is not a workspace")
    pin = GroupEmbedding.objects.select_for_update().filter(group_id=group_id).first()
    own = catalog.default if pin is None else pin_provider(pin, catalog)
    if provider is not None and catalog.passage(provider).model == catalog.passage(own).model:
        raise SwitchRefused(
            f"{group_id} is indexed with {own} already: a companion must be another model"
        )
    if pin is None:
        embedder = catalog.passage(own)
        pin = GroupEmbedding.objects.create(
            group_id=group_id, provider=own, model=embedder.model, dimension=embedder.dimension
        )
    previous = pin.companion or None
    removed = 0
    if previous is not None and previous != provider:
        old_model = catalog.passage(previous).model if previous in catalog.choices() else None
        stale = CompanionVector.objects.filter(group_id=group_id)
        if old_model is not None:
            stale = stale.filter(model=old_model)
        removed, _ = stale.delete()
    GroupEmbedding.objects.filter(pk=pin.pk).update(
        companion=provider or "", companion_chosen_at=timezone.now()
    )
    model = catalog.passage(provider).model if provider is not None else None
    to_embed = companion_missing(group_id, model).count() if model is not None else 0
    audit_record(
        actor=actor,
        group_id=group_id,
        action="embedding.companion",
        target=("groupembedding", group_id),
        data={
            "from": previous,
            "to": provider,
            "model": model,
            "to_embed": to_embed,
            "removed": removed,
            "reason": reason.strip(),
        },
    )
    return Companion(group_id, provider, model, to_embed, removed)
