"""Which embedding model indexes each workspace, switching it, and catching up after a switch.

A workspace (group) is indexed with one model at a time, recorded in its
`GroupEmbedding` pin. The operator offers models (VERA_EMBEDDER__CHOICES, an allow-list:
a tenant can never name a model, host or file of its own); a workspace admin picks one
of them. A switch takes effect at once for new writes and for queries; the group's
existing documents are re-embedded in the background (`index_catch_up`, a beat task),
and until then the vector half simply does not see them (vectors are compared only
within one model) while full text still finds them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from curation.ports import Embedder
from retrieval.models import GroupEmbedding, SearchDocument
from retrieval.ports import EmbedderCatalog
from tenants.domain.access import Principal
from tenants.domain.scopes import Role, ScopeKind
from tenants.models import Scope
from tenants.services.audit import audit_record
from tenants.services.scopes import PermissionDenied

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


def visible_providers(catalog: EmbedderCatalog) -> list[str]:
    """The providers of the groups the tenant context sees (RLS), the default first.

    A search embeds its query once per provider listed here. A pin whose model is no
    longer offered is left out (logged): its documents are found by full text only.
    """
    found: set[str] = set()
    for pin in GroupEmbedding.objects.all():
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
