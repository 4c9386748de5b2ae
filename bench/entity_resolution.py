"""Entity resolution on labelled name pairs, through the real resolution service.

    .venv/bin/python -m bench.entity_resolution [--embedder hashing|none]

For every pair (name_a, name_b, same?) of ../shared/eval/entity_names/country_pairs.dev.tsv:
all name_a are first registered as entities of one group (so a wrong answer can land
on any other country, as in production); then name_b is resolved inside a savepoint
that is rolled back, so pairs do not learn from each other. Predicted "same" means
name_b resolved to name_a's entity. Prints precision, recall and the errors.
The spec's bar: precision >= 0.99 (a false merge is worse than a missed one).
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import Counter

from bench.common import ROOT, setup_django, timed

PAIRS = ROOT.parent / "shared" / "eval" / "entity_names" / "country_pairs.dev.tsv"


class _Rollback(Exception):
    pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--embedder", choices=["none", "hashing"], default="none")
    args = parser.parse_args()
    setup_django()
    from django.db import transaction

    from curation.services.entities import entity_resolve
    from retrieval.adapters.hashing_embedder import HashingEmbedder
    from tenants import rls
    from tenants.domain.scopes import ScopeKind
    from tenants.selectors import principal_system
    from tenants.services.scopes import scope_create

    embedder = HashingEmbedder() if args.embedder == "hashing" else None
    rows = list(csv.DictReader(PAIRS.open(encoding="utf-8"), delimiter="\t"))
    org = scope_create(kind=ScopeKind.ORGANISATION, name="ER Org")
    workspace = scope_create(kind=ScopeKind.WORKSPACE, name="ER WS", parent_id=org.pk)
    group = workspace.group_id
    outcome: Counter[str] = Counter()
    errors: list[str] = []
    with rls.tenant_context(principal_system("bench", group_ids=[group])), timed() as elapsed:
        known = {}
        for row in rows:
            if row["name_a"] not in known:
                known[row["name_a"]] = entity_resolve(
                    group_id=group, name=row["name_a"], entity_type="country", embedder=embedder
                ).entity.pk
        for row in rows:
            try:
                with transaction.atomic():
                    got = entity_resolve(
                        group_id=group, name=row["name_b"], entity_type="country", embedder=embedder
                    )
                    raise _Rollback(got.entity.pk, got.method)
            except _Rollback as result:
                entity_id, method = result.args
            predicted = entity_id == known[row["name_a"]]
            actual = row["same_entity"] == "1"
            key = {(True, True): "tp", (True, False): "fp", (False, True): "fn"}.get(
                (predicted, actual), "tn"
            )
            outcome[key] += 1
            if key == "fp":
                errors.append(f"false merge: {row['name_a']!r} ~ {row['name_b']!r} ({method})")
    tp, fp, fn = outcome["tp"], outcome["fp"], outcome["fn"]
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    print(f"pairs {len(rows)}  embedder {args.embedder}  {elapsed[0]:.1f} s")
    print(f"tp {tp}  fp {fp}  fn {fn}  tn {outcome['tn']}")
    print(f"precision {precision:.4f}  recall {recall:.4f}")
    for line in errors[:20]:
        print("  " + line)
    return 0 if precision >= 0.99 else 1


if __name__ == "__main__":
    sys.exit(main())
