"""Read-side queries of curation, one module per topic:

- `claims`: a claim's history, the valid-time filters (`claims_valid`), the claims list
  (`claims_filtered`), functional predicates and the published value a claim would
  supersede (`attach_current_values`), related claims, claims as models (`claim_models`).
- `review`: the review, re-check and merge queues, their counts and filter options, and
  the claims queue by document (`review_document_ids`, `review_documents`, `DocumentCard`).
- `entities`: merge survivors, an entity's page (`entity_view`), its neighbourhood in the
  graph (`entity_related`, `RelatedPath`, `Neighbourhood`) and its picture.
- `system`: the system finders across every group: outbox lane load, due groups and dead
  letters, sources due, stale reprocessing runs.
- `ontology`: a workspace's ontology (`ontology_for`, `ontologies_for`) and the one a
  version pinned (`ontology_at`).

Every public name is re-exported here: import from `curation.selectors`.
"""

from curation.selectors.claims import (
    attach_current_values,
    claim_history,
    claim_models,
    claim_related,
    claims_filtered,
    claims_valid,
    functional_predicates,
)
from curation.selectors.entities import (
    EntityView,
    Neighbourhood,
    RelatedPath,
    entity_picture,
    entity_related,
    entity_survivor,
    entity_view,
    entity_visible,
)
from curation.selectors.ontology import ontologies_for, ontology_at, ontology_for
from curation.selectors.review import (
    RECHECKABLE,
    SORTS,
    DocumentCard,
    merge_queue,
    queue_counts,
    queue_filter_options,
    recheck_queue,
    review_document_ids,
    review_documents,
    review_queue,
    reviewable_groups,
)
from curation.selectors.system import (
    outbox_dead_letters,
    outbox_due_groups,
    outbox_lane_load,
    reprocessings_stale,
    sources_due,
)

__all__ = [
    "RECHECKABLE",
    "SORTS",
    "DocumentCard",
    "EntityView",
    "Neighbourhood",
    "RelatedPath",
    "attach_current_values",
    "claim_history",
    "claim_models",
    "claim_related",
    "claims_filtered",
    "claims_valid",
    "entity_picture",
    "entity_related",
    "entity_survivor",
    "entity_view",
    "entity_visible",
    "functional_predicates",
    "merge_queue",
    "ontologies_for",
    "ontology_at",
    "ontology_for",
    "outbox_dead_letters",
    "outbox_due_groups",
    "outbox_lane_load",
    "queue_counts",
    "queue_filter_options",
    "recheck_queue",
    "reprocessings_stale",
    "review_document_ids",
    "review_documents",
    "review_queue",
    "reviewable_groups",
    "sources_due",
]
