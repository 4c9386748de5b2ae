"""The ontology: a workspace's current ontology (one or several at once) and the one a
given version pinned."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import Any

from django.db import connection

from curation.domain.ontology import DEFAULT_ONTOLOGY, Ontology, PredicateSense
from curation.domain.ontology_records import ontology_of, sense_of
from curation.models import OntologyRevision

logger = logging.getLogger(__name__)


_SENSE_COLUMNS = ("name", "label", "description", "words", "questions", "object_type",
                  "functional")  # fmt: skip


def ontology_for(group_id: str) -> Ontology:
    """The workspace's ontology: the defaults with its own senses in their place, at its
    version (0 when never edited). Read under the caller's RLS context: a workspace the
    caller cannot see reads as never edited."""
    return ontologies_for([group_id])[group_id]


def ontologies_for(group_ids: Iterable[str]) -> dict[str, Ontology]:
    """`ontology_for` of each group, in one query (a search spans several workspaces):
    each edited group's latest version, with its own senses gathered beside it."""
    wanted = sorted(set(group_ids))
    if not wanted:
        return {}
    # Raw SQL: every search reads it, and composing the ORM's subquery cost more than
    # running it. Row-level security applies to both tables as to any query.
    sense = ", ".join(f"'{column}', p.{column}" for column in _SENSE_COLUMNS)
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT DISTINCT ON (r.group_id) r.group_id, r.version,
                (SELECT jsonb_agg(jsonb_build_object({sense})) FROM curation_predicate p
                 WHERE p.group_id = r.group_id)
            FROM curation_ontologyrevision r WHERE r.group_id = ANY(%s)
            ORDER BY r.group_id, r.version DESC
            """,  # noqa: S608 - fixed column names; the groups are a parameter
            [wanted],
        )
        latest = [
            (group_id, version, json.loads(own) if isinstance(own, str) else own)
            for group_id, version, own in cursor.fetchall()
        ]
    edited = {
        group_id: DEFAULT_ONTOLOGY.overridden(_senses(group_id, own or []), version=version)
        for group_id, version, own in latest
    }
    return {group_id: edited.get(group_id, DEFAULT_ONTOLOGY) for group_id in wanted}


def _senses(group_id: str, rows: list[dict[str, Any]]) -> list[PredicateSense]:
    """The rows' senses; one the rules no longer accept is left out (its default stands)
    and logged, rather than failing every search of the workspace."""
    senses = []
    for row in rows:
        try:
            senses.append(sense_of(row))
        except ValueError as error:
            logger.warning("ontology of %s: %s left out: %s", group_id, row.get("name"), error)
    return senses


def ontology_at(*, group_id: str, version: int) -> Ontology | None:
    """The workspace's ontology exactly as its `version`-th edit left it (what a snapshot
    pinned); version 0 is the defaults. None when the caller cannot see that version."""
    if version == 0:
        return DEFAULT_ONTOLOGY
    senses = (
        OntologyRevision.objects.filter(group_id=group_id, version=version)
        .values_list("senses", flat=True)
        .first()
    )
    return None if senses is None else ontology_of(senses, version=version)
