"""Entity resolution precision and recall, through the production resolution path.

    .venv/bin/python -m bench.entity_resolution [--embedder minilm|hashing|none]

Names: the labelled pairs of ../shared/eval/entity_names/country_pairs.dev.tsv (13
languages, hard negatives such as Niger/Nigeria) plus built-in identifier-like hard
negatives (prod-eu-1 / prod-eu-3, db-01 / db-02, payments-v1 / payments-v2, us-east-1 /
us-west-1, Samoa / American Samoa...) and a few spelling variants of service names
(case, spacing, a typo) that must still link.

Every name_a is first resolved in turn into one group, as an ingest would (so a wrong
answer can land on any entity); then each name_b is resolved inside a savepoint that is
rolled back, so names do not learn from each other. Resolution is `entity_resolve`
exactly as ingestion calls it: exact, trigram, semantic (with the embedder), with the
identifier blocking, and no judge. Each resolution is scored against the gold entity:

- linked to an existing entity of the same gold entity: a true merge (tp);
- linked to an entity of another gold entity: a false merge (fp), whatever the pair's
  label says (a positive pair resolved to the wrong entity is still a false merge);
- a new entity although the gold entity was already there: a miss (fn); otherwise tn.

Precision = tp / (tp + fp), recall = tp / (tp + fn). The bar: precision >= 0.99 (a false
merge is worse than a missed one); the exit status is 1 below it.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from bench.common import ROOT, setup_django, timed

PAIRS = ROOT.parent / "shared" / "eval" / "entity_names" / "country_pairs.dev.tsv"
PRECISION_BAR = 0.99


@dataclass(frozen=True)
class Pair:
    """Two names, their gold entities and the entity type they are resolved as."""

    name_a: str
    name_b: str
    gold_a: str
    gold_b: str
    entity_type: str
    kind: str


def _siblings(template: str, numbers: list[str]) -> list[tuple[str, str]]:
    names = [template.format(n) for n in numbers]
    return [(names[0], other) for other in names[1:]]


# Identifier-like hard negatives: names that differ in a number, a version, a region or a
# word, and are different things (each name is its own gold entity).
IDENTIFIER_NEGATIVES: list[tuple[str, str]] = [
    *_siblings("Kubernetes cluster prod-eu-{}", ["1", "2", "3"]),
    *_siblings("db-{}", ["01", "02", "10"]),
    *_siblings("payments-v{}", ["1", "2", "3"]),
    *_siblings("k8s-prod-{}", ["1", "2"]),
    *_siblings("web-{}.acme.internal", ["001", "002", "011"]),
    *_siblings("PostgreSQL {}", ["15", "16"]),
    *_siblings("ledger-db-replica-{}", ["1", "2"]),
    *_siblings("Release {}", ["2024.1", "2024.2", "2025.1"]),
    *_siblings("billing-api v{}", ["1.2", "1.3", "2.0"]),
    *_siblings("node-{}-eu-west", ["7", "8"]),
    *_siblings("payments-prod-{}-1", ["eu", "us", "ap"]),
    ("us-east-1", "us-west-1"),
    ("eu-central-1", "eu-north-1"),
    ("orders-api", "orders-web"),
    ("orders-api", "orders-api-gateway"),
    ("billing-worker", "billing-scheduler"),
    ("checkout-service", "checkout-service-canary"),
    ("C#", "C++"),
    ("Team A", "Team B"),
    ("Phase II", "Phase III"),
]

# Countries beyond the data set's A-M that are hard negatives of countries in it (ISO codes).
COUNTRY_NEGATIVES: list[tuple[str, str, str, str]] = [
    ("Samoa", "American Samoa", "WS", "AS"),
    ("Sudan", "South Sudan", "SD", "SS"),
    ("Papua New Guinea", "Guinea", "PG", "GN"),
    ("Niger", "Nigeria", "NE", "NG"),
]

# Spelling variants of one name: case, spacing, punctuation, a typo (same entity).
SPELLING_VARIANTS: list[tuple[str, str]] = [
    ("Payments API", "payments-api"),
    ("Postgres", "Postgress"),
    ("payments-gateway-service", "payments-gateway-servce"),
    ("Ledger Database", "ledger database"),
    ("checkout_web", "checkout-web"),
    ("Kubernetes cluster prod-eu-1", "kubernetes-cluster prod-eu-1"),
    ("Data Warehouse", "DataWarehouse"),
    ("Notification Service", "Notifcation Service"),
]


def load_pairs() -> list[Pair]:
    with PAIRS.open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    pairs = [
        Pair(row["name_a"], row["name_b"], row["entity_a"], row["entity_b"], "country",
             row["kind_b"])
        for row in rows
    ]  # fmt: skip
    pairs += [
        Pair(a, b, f"x:{a}", f"x:{b}", "service", "identifier") for a, b in IDENTIFIER_NEGATIVES
    ]
    pairs += [Pair(a, b, f"x:{a}", f"x:{a}", "service", "spelling") for a, b in SPELLING_VARIANTS]
    return pairs


@dataclass
class Score:
    """Resolution outcomes, with the false merges and misses named."""

    counts: Counter[str] = field(default_factory=Counter)
    by_method: Counter[str] = field(default_factory=Counter)
    false_merges: list[str] = field(default_factory=list)
    misses: Counter[str] = field(default_factory=Counter)

    def add(self, outcome: str, method: str, note: str, kind: str) -> None:
        self.counts[outcome] += 1
        self.by_method[f"{outcome}:{method}"] += 1
        if outcome == "fp":
            self.false_merges.append(note)
        elif outcome == "fn":
            self.misses[kind] += 1

    @property
    def precision(self) -> float:
        tp, fp = self.counts["tp"], self.counts["fp"]
        return tp / (tp + fp) if tp + fp else 1.0

    @property
    def recall(self) -> float:
        tp, fn = self.counts["tp"], self.counts["fn"]
        return tp / (tp + fn) if tp + fn else 0.0


class _Rollback(Exception):
    pass


@dataclass
class Registry:
    """What the group holds: entity pk -> gold entity, and the gold entities present."""

    gold_of: dict[int, str] = field(default_factory=dict)
    present: set[str] = field(default_factory=set)

    def judge(self, resolution: Any, gold: str) -> str:
        """tp, fp, fn or tn for one resolution of a name whose gold entity is `gold`."""
        if resolution.method != "new":
            return "tp" if self.gold_of.get(resolution.entity.pk) == gold else "fp"
        return "fn" if gold in self.present else "tn"


def _note(name: str, got: Any) -> str:
    score = "" if got.score is None else f" {got.score:.3f}"
    return f"{name!r} -> {got.entity.canonical_name!r} ({got.method}{score})"


def run(pairs: list[Pair], *, group: str, embedder: Any) -> Score:
    """Register every name_a (scored as it goes), then resolve each name_b and roll back."""
    from django.db import transaction

    from curation.usecases import entity_resolve

    def resolve(name: str, entity_type: str) -> Any:
        return entity_resolve(group_id=group, name=name, entity_type=entity_type, embedder=embedder)

    score, registry, seen = Score(), Registry(), set()
    for pair in pairs:
        if (pair.name_a, pair.entity_type) in seen:
            continue
        seen.add((pair.name_a, pair.entity_type))
        got = resolve(pair.name_a, pair.entity_type)
        outcome = registry.judge(got, pair.gold_a)
        score.add(outcome, got.method, _note(pair.name_a, got), "registration")
        registry.gold_of.setdefault(got.entity.pk, pair.gold_a)
        registry.present.add(pair.gold_a)
    for pair in pairs:
        try:
            with transaction.atomic():
                raise _Rollback(resolve(pair.name_b, pair.entity_type))
        except _Rollback as rolled_back:
            got = rolled_back.args[0]
        score.add(registry.judge(got, pair.gold_b), got.method, _note(pair.name_b, got), pair.kind)
    return score


def _embedder(name: str) -> Any:
    if name == "none":
        return None
    if name == "hashing":
        from retrieval.adapters.hashing_embedder import HashingEmbedder

        return HashingEmbedder()
    from retrieval.adapters.embedders import MiniLMEmbedder

    embedder = MiniLMEmbedder()
    embedder.warm_up()
    return embedder


def report(score: Score, *, pairs: int, embedder: str, seconds: float) -> None:
    from curation.usecases import FUZZY_CANDIDATE, FUZZY_LINK, SEMANTIC_CANDIDATE, SEMANTIC_LINK

    counts = score.counts
    print(f"pairs {pairs}  embedder {embedder}  judge none  {seconds:.1f} s")
    print(
        f"thresholds: fuzzy link {FUZZY_LINK}  candidate {FUZZY_CANDIDATE}  "
        f"semantic link {SEMANTIC_LINK}  candidate {SEMANTIC_CANDIDATE}"
    )
    print(f"tp {counts['tp']}  fp {counts['fp']}  fn {counts['fn']}  tn {counts['tn']}")
    print(f"precision {score.precision:.4f}  recall {score.recall:.4f}")
    print("by method: " + "  ".join(f"{k} {v}" for k, v in sorted(score.by_method.items())))
    print("misses by kind: " + "  ".join(f"{k} {v}" for k, v in score.misses.most_common()))
    for line in score.false_merges[:30]:
        print("  false merge: " + line)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--embedder", choices=["none", "hashing", "minilm"], default="none")
    args = parser.parse_args()
    setup_django()
    from tenants import rls
    from tenants.domain.scopes import ScopeKind
    from tenants.selectors import principal_system
    from tenants.usecases import scope_create

    pairs = load_pairs()
    embedder = _embedder(args.embedder)
    org = scope_create(kind=ScopeKind.ORGANISATION, name="ER Org")
    workspace = scope_create(kind=ScopeKind.WORKSPACE, name="ER WS", parent_id=org.pk)
    group = workspace.group_id
    with rls.tenant_context(principal_system("bench", group_ids=[group])), timed() as elapsed:
        score = run(pairs, group=group, embedder=embedder)
    report(score, pairs=len(pairs), embedder=args.embedder, seconds=elapsed[0])
    return 0 if score.precision >= PRECISION_BAR else 1


if __name__ == "__main__":
    sys.exit(main())
