"""Ontology use cases: a workspace admin sets one predicate's sense, or resets it to the
default (audited). The one write path: the admin and the REST API both call these.

Every edit that changes something moves the workspace's version by one and keeps the
whole ontology as it now is (OntologyRevision, append-only), so a knowledge snapshot that
pinned a version reads back exactly what its searches understood questions with. An edit
that changes nothing is no edit: no version, no audit event.
"""

from __future__ import annotations

from dataclasses import replace

from django.db import connection, transaction

from common.errors import PermissionDenied
from curation.domain.ontology import DEFAULT_ONTOLOGY, Ontology, PredicateSense
from curation.domain.ontology_records import (
    changed_fields,
    name_refusal,
    ontology_records,
    sense_record,
    stored_refusal,
)
from curation.models import OntologyRevision, Predicate
from curation.selectors import ontology_for
from tenants.domain.access import Principal
from tenants.domain.scopes import Role
from tenants.services.audit import audit_record


def ontology_predicate_set(*, actor: Principal, group_id: str, sense: PredicateSense) -> Ontology:
    """Create or replace the workspace's own sense of `sense.name`; the ontology after it."""
    _admin_only(actor, group_id)
    if reason := stored_refusal(sense):
        raise ValueError(reason)
    with transaction.atomic():
        _lock(group_id)
        before = ontology_for(group_id)
        changed = changed_fields(before.get(sense.name), sense)
        if not changed:
            return before
        columns = {key: value for key, value in sense_record(sense).items() if key != "name"}
        Predicate.objects.update_or_create(group_id=group_id, name=sense.name, defaults=columns)
        after = before.overridden([sense], version=before.version + 1)
        _revise(actor, group_id, after, action="set", name=sense.name, changed=changed)
        return after


def ontology_predicate_reset(*, actor: Principal, group_id: str, name: str) -> Ontology:
    """Drop the workspace's own sense of `name`: the default applies again (none, for a
    predicate only the workspace had). Resetting what was never set changes nothing."""
    _admin_only(actor, group_id)
    if reason := name_refusal(name):
        raise ValueError(reason)
    with transaction.atomic():
        _lock(group_id)
        before = ontology_for(group_id)
        deleted, _ = Predicate.objects.filter(group_id=group_id, name=name).delete()
        if not deleted:
            return before
        senses = {key: sense for key, sense in before.senses.items() if key != name}
        if (default := DEFAULT_ONTOLOGY.get(name)) is not None:
            senses[name] = default
        after = replace(before, senses=senses, version=before.version + 1)
        changed = changed_fields(before.get(name), default)
        _revise(actor, group_id, after, action="reset", name=name, changed=changed)
        return after


def _admin_only(actor: Principal, group_id: str) -> None:
    if not actor.can(Role.ADMIN, group_id):
        raise PermissionDenied("editing the ontology needs the admin role in this workspace")


def _lock(group_id: str) -> None:
    """One edit of a workspace's ontology at a time: each reads the version it bumps."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [f"vera.ontology:{group_id}"])


def _revise(
    actor: Principal, group_id: str, after: Ontology, *, action: str, name: str,
    changed: list[str],
) -> None:  # fmt: skip
    """Keep the new version whole and say in the audit trail who changed what."""
    OntologyRevision.objects.create(
        group_id=group_id, version=after.version, senses=ontology_records(after),
        action=action, name=name, actor=actor.label,
    )  # fmt: skip
    audit_record(
        actor=actor, group_id=group_id, action=f"ontology.predicate.{action}",
        target=("predicate", name),
        data={"name": name, "changed": changed, "version": after.version},
    )  # fmt: skip
