"""Does the first hit answer a plain question? VERA, BM25 and dense-only, per relation.

    .venv/bin/python -m bench.questions [--services 300] [--seed 7]
        [--questions-per-relation 100] [--phrasings default|heldout]
        [--embedder minilm|hashing|e5] [--reuse] [--out figures.json]

An estate generated from the seed (`bench/estate.py`: services with hosts, owners,
dependencies, versions, regions, languages, environments; near-identical and
reordered names among them) is written as a CMDB export (tier 1) and prose runbooks
for half of the services (tier 2), ingested through the real connectors and
`ingest_now`, and indexed by draining the outbox. Then operator questions ("where
does X run", "who owns X", ...) are asked, each relation in several phrasings;
`--phrasings heldout` asks the same (service, relation) pairs in a second, disjoint
set of phrasings, to check that nothing is tuned to the wording.

A hit is right when its claim is published, its subject is the asked service (by the
entity's canonical name or an alias), its predicate the relation asked for, and its
object one of the estate's values (any dependency for DEPENDS_ON), names compared
normalised. Three systems rank the same index in the same run: VERA (`search`, as
the REST API calls it, not recorded), BM25 (stage 1's full-text list alone) and
dense-only (its vector list alone). Prints hit@1, hit@3 and MRR@10 per relation and
overall, and VERA's p50/p95 search latency. Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import analyze, setup_django
from bench.domains import GENERATORS, Domain
from bench.estate import Estate, Service

# Question forms per relation; `{s}` is the service. The held-out set shares no form
# with the default set (nor with the ontology's question forms).
PHRASINGS: dict[str, dict[str, tuple[str, ...]]] = {
    "default": {
        "RUNS_ON": ("where does {s} run", "what does {s} run on", "which host is {s} on",
                    "{s} runs where?", "which server runs {s}"),
        "OWNED_BY": ("who owns {s}", "which team owns {s}", "{s} owner",
                     "who is responsible for {s}?"),
        "DEPENDS_ON": ("what does {s} depend on", "{s} dependencies",
                       "which services does {s} need", "what are the upstreams of {s}?"),
        "HAS_VERSION": ("which version is {s}", "what version of {s} is running",
                        "{s} version", "what release is {s} on?"),
        "HOSTED_IN": ("which region is {s} in", "where is {s} hosted", "{s} region",
                      "what region hosts {s}?"),
        "WRITTEN_IN": ("what language is {s} written in", "which language is {s} in",
                       "{s} programming language", "what is {s} implemented in?"),
        "DEPLOYED_TO": ("which environment is {s} deployed to", "{s} environment",
                        "what environment does {s} use", "is {s} in production or staging?"),
    },
    "heldout": {
        "RUNS_ON": ("on which machine is {s} running", "{s} host",
                    "tell me the node {s} is scheduled on", "what box hosts {s}?"),
        "OWNED_BY": ("which team should I contact about {s}", "whose service is {s}",
                     "owning team of {s}", "{s} belongs to which team?"),
        "DEPENDS_ON": ("list the dependencies of {s}", "{s} relies on what?",
                       "what must be up for {s} to work", "upstream services of {s}"),
        "HAS_VERSION": ("current build of {s}", "which release of {s} is deployed right now",
                        "what's the latest deployed tag for {s}", "{s} is at what version?"),
        "HOSTED_IN": ("in which AWS region does {s} live", "{s} data centre location",
                      "which cloud region serves {s}", "where geographically is {s}?"),
        "WRITTEN_IN": ("what stack is {s} coded in", "which programming language does {s} use",
                       "{s} source code language?", "what was {s} built with"),
        "DEPLOYED_TO": ("what env is {s} deployed in", "{s} deployment environment?",
                        "which stage does {s} run in", "which tier of environments holds {s}"),
    },
    # A third set, written before the understanding was improved against the others and
    # read only as a whole: the check that the improvements carry to unseen wording.
    "fresh": {
        "RUNS_ON": ("what cluster does {s} run in", "{s} runs on which host?",
                    "name the machine behind {s}", "which node is {s} on"),
        "OWNED_BY": ("who is accountable for {s}", "who's the owner of {s}", "{s} team",
                     "which group has ownership of {s}"),
        "DEPENDS_ON": ("which components does {s} call", "what would break {s} if it went down",
                       "{s} upstream dependencies", "what services is {s} dependent on"),
        "HAS_VERSION": ("what version is {s} running", "{s} release number",
                        "which build of {s} is live", "version of {s} in use"),
        "HOSTED_IN": ("what region is {s} located in", "{s} geographic region",
                      "which data center hosts {s}", "where in the world does {s} run"),
        "WRITTEN_IN": ("what is {s} programmed in", "{s} language",
                       "which language was {s} written in", "what tech stack does {s} use"),
        "DEPLOYED_TO": ("which environment hosts {s}", "is {s} a production or staging deployment",
                        "{s} env", "what stage is {s} deployed at"),
    },
    # A fifth, written after the fourth had been read, and read only as a whole.
    "fresh3": {
        "RUNS_ON": ("which node hosts {s}", "{s} is running on which machine",
                    "what compute does {s} use", "show me the server for {s}"),
        "OWNED_BY": ("who maintains ownership of {s}", "{s} owner team",
                     "which team is accountable for {s}", "who should I ask about {s}"),
        "DEPENDS_ON": ("what services does {s} call", "{s} upstream services",
                       "what is {s} dependent upon", "what breaks if {s} loses its dependencies"),
        "HAS_VERSION": ("what is the deployed version of {s}", "{s} release",
                        "which build of {s} runs now", "tell me {s}'s version"),
        "HOSTED_IN": ("what region does {s} run in", "{s} location",
                      "which datacenter is {s} in", "where geographically does {s} sit"),
        "WRITTEN_IN": ("what language does {s} use", "{s} tech stack",
                       "which language is {s} programmed in", "what is the code of {s} written in"),
        "DEPLOYED_TO": ("what environment is {s} in", "{s} deployment stage",
                        "is {s} running in production", "which env is {s} deployed to"),
    },
    # A fourth, written after the third had been read (and read only as a whole).
    "fresh2": {
        "RUNS_ON": ("what hardware does {s} sit on", "{s} server?", "what's {s} hosted on",
                    "which instance runs {s}"),
        "OWNED_BY": ("who do I page about {s}", "{s} owning team",
                     "which squad is responsible for {s}", "who is in charge of {s}"),
        "DEPENDS_ON": ("what does {s} talk to", "what does {s} require",
                       "which systems does {s} rely on", "{s} deps"),
        "HAS_VERSION": ("what build is {s} on", "{s} current version",
                        "which tag of {s} is live", "what version number does {s} have"),
        "HOSTED_IN": ("{s} region?", "where is {s} physically located",
                      "which geography serves {s}", "in what region does {s} reside"),
        "WRITTEN_IN": ("{s} is coded in what", "which programming language powers {s}",
                       "what's the codebase language of {s}", "what tech is {s} written with"),
        "DEPLOYED_TO": ("which environment does {s} live in", "{s} prod or staging?",
                        "what env hosts {s}", "where is {s} deployed"),
    },
}  # fmt: skip
SYSTEMS = ("VERA", "BM25", "dense")
CUTOFF = 10
OPS = "ops"
DOMAINS = (OPS, *GENERATORS)


@dataclass(frozen=True)
class Question:
    """One question about one item, with its gold: the relation asked, and the values
    that answer it (the subjects, for an inverse question: "who reports to X")."""

    text: str
    form: str
    domain: str
    relation: str  # the predicate, with "~" before it when asked inversely
    anchor: str  # the item the question names
    gold: frozenset[str]
    runbook: bool = False

    @property
    def predicate(self) -> str:
        return self.relation.removeprefix("~")

    @property
    def inverse(self) -> bool:
        return self.relation.startswith("~")


@dataclass(frozen=True)
class ClaimFact:
    """A published claim as the judge reads it: normalised names of subject and object."""

    subjects: frozenset[str]
    predicate: str
    objects: frozenset[str]


@dataclass
class Workspace:
    """A domain's workspace in one condition: out of the box, or with the admin's ontology."""

    domain: str
    condition: str  # "plain" or "ontology"
    group_id: str
    seconds: float


def ops_questions(estate: Estate, *, per_relation: int, phrasings: str) -> list[Question]:
    """`per_relation` questions per relation; the same services whatever the phrasing set."""
    out = []
    for predicate, forms in PHRASINGS[phrasings].items():
        rng = random.Random(f"{estate.seed}:questions:{predicate}")  # noqa: S311
        pool = list(estate.services)
        rng.shuffle(pool)
        chosen: Sequence[Service] = [pool[i % len(pool)] for i in range(per_relation)]
        for index, service in enumerate(chosen):
            form = forms[index % len(forms)]
            gold = frozenset(_norm(o) for o in service.objects(predicate))
            out.append(Question(form.format(s=service.name), form, OPS, predicate,
                                service.name, gold, service.runbook))  # fmt: skip
    return out


def domain_questions(domain: Domain, *, per_relation: int, phrasings: str) -> list[Question]:
    """`per_relation` questions per relation of a generated domain (items that have a value
    for it; for an inverse relation, values that some item has)."""
    out = []
    for relation, forms in domain.phrasings[phrasings].items():
        predicate = relation.removeprefix("~")
        rng = random.Random(f"{domain.seed}:{domain.name}:questions:{relation}")  # noqa: S311
        if relation.startswith("~"):
            anchors = sorted({o for item in domain.items for o in item.objects(predicate)})
            answers = {anchor: domain.subjects_of(predicate, anchor) for anchor in anchors}
        else:
            answers = {i.name: i.objects(predicate) for i in domain.items if i.objects(predicate)}
        pool = sorted(answers)
        rng.shuffle(pool)
        for index in range(min(per_relation, len(pool) * len(forms))):
            anchor, form = pool[index % len(pool)], forms[index % len(forms)]
            gold = frozenset(_norm(value) for value in answers[anchor])
            out.append(Question(form.format(s=anchor), form, domain.name, relation, anchor, gold))
    return out


def ingest_ops(estate: Estate, *, reuse: bool) -> Workspace:
    """The workspace holding the estate (CMDB tier 1, runbooks tier 2), indexed."""
    name = f"Questions {estate.seed}/{len(estate.services)}"
    if reuse and (group_id := _existing(name)) is not None:
        return Workspace(OPS, "plain", group_id, 0.0)
    folder = Path(tempfile.gettempdir()) / f"vera-bench-questions-{estate.seed}"
    cmdb, runbooks = estate.write(folder)
    sources = [
        {"name": "cmdb", "kind": "cmdb", "config": {"path": str(cmdb)}, "trust_tier": 1},
        {"name": "runbooks", "kind": "markdown", "config": {"root": str(runbooks)},
         "trust_tier": 2},
    ]  # fmt: skip
    group_id, seconds = _ingest(name, sources)  # the CMDB first: prose then links to it
    return Workspace(OPS, "plain", group_id, seconds)


def ingest_domain(domain: Domain, condition: str, *, reuse: bool) -> Workspace:
    """A workspace holding the domain's export (a tier-1 CMDB source with its mapping),
    indexed; with condition "ontology", the admin's ontology entries written first."""
    from curation.domain.ontology import PredicateSense
    from curation.usecases import ontology_predicate_set
    from tenants import rls
    from tenants.selectors import principal_system

    name = f"Questions {domain.name} {condition} {domain.seed}/{len(domain.items)}"
    if reuse and (group_id := _existing(name)) is not None:
        return Workspace(domain.name, condition, group_id, 0.0)
    folder = Path(tempfile.gettempdir()) / f"vera-bench-questions-{domain.name}-{domain.seed}"
    export = domain.write(folder)
    config = {"path": str(export), "mapping": dict(domain.mapping), "id_field": domain.id_field}
    senses = (
        [PredicateSense(**entry) for entry in domain.ontology]  # type: ignore[arg-type]
        if condition == "ontology"
        else []
    )

    def before(group_id: str) -> None:
        admin = principal_system("bench", group_ids=[group_id])
        with rls.tenant_context(admin):
            for sense in senses:
                ontology_predicate_set(actor=admin, group_id=group_id, sense=sense)

    source = {"name": domain.name, "kind": "cmdb", "config": config, "trust_tier": 1}
    group_id, seconds = _ingest(name, [source], before=before)
    return Workspace(domain.name, condition, group_id, seconds)


def _existing(name: str) -> str | None:
    from tenants.models import Scope

    found = Scope.objects.filter(name=name).first()
    return None if found is None else found.group_id


def _ingest(name: str, sources: list[dict[str, Any]], *, before: Any = None) -> tuple[str, float]:
    """A new organisation and workspace `name` with these sources, ingested in order and
    indexed; its group id and the seconds it took."""
    from curation.tasks import process_outbox
    from curation.usecases import ingest_now, source_create
    from tenants import rls
    from tenants.domain.scopes import ScopeKind
    from tenants.selectors import principal_system
    from tenants.usecases import scope_create

    org = scope_create(kind=ScopeKind.ORGANISATION, name=f"{name} Org")
    workspace = scope_create(kind=ScopeKind.WORKSPACE, name=name, parent_id=org.pk)
    if before is not None:
        before(workspace.group_id)
    principal = principal_system("bench", group_ids=[workspace.group_id])
    with rls.tenant_context(principal):
        created = [
            source_create(actor=principal, group_id=workspace.group_id, **source)
            for source in sources
        ]
    started = time.perf_counter()
    for source in created:
        report = ingest_now(source_id=source.pk, group_id=workspace.group_id)
        print(f"ingested {name}: {source.name:<9} {report.new} records, claims "
              f"{dict(report.claims)}")  # fmt: skip
    while process_outbox():
        pass
    return workspace.group_id, time.perf_counter() - started


def claim_facts(predicates: set[str]) -> dict[int, ClaimFact]:
    """Every published claim of the asked predicates, by id (under the caller's tenant)."""
    from curation.domain.names import normalize_name
    from curation.domain.tiers import ClaimStatus
    from curation.models import Claim, Entity, EntityAlias

    names: dict[int, set[str]] = defaultdict(set)
    for pk, canonical in Entity.objects.values_list("pk", "canonical_name"):
        names[pk].add(normalize_name(canonical))
    for entity_id, alias_norm in EntityAlias.objects.values_list("entity_id", "alias_norm"):
        names[entity_id].add(alias_norm)
    rows = Claim.objects.filter(status=ClaimStatus.PUBLISHED, predicate__in=predicates)
    facts = {}
    for pk, subject, predicate, obj, literal in rows.values_list(
        "pk", "subject_id", "predicate", "object_entity_id", "object_literal"
    ):
        objects = names[obj] if obj is not None else {normalize_name(literal or "")}
        facts[pk] = ClaimFact(frozenset(names[subject]), predicate, frozenset(objects))
    return facts


def right(fact: ClaimFact | None, question: Question) -> bool:
    """Whether a hit's claim answers the question: the asked relation, the named item on
    its side (the object, when asked inversely), a gold value on the other."""
    if fact is None or fact.predicate != question.predicate:
        return False
    named, other = (fact.objects, fact.subjects) if question.inverse else (fact.subjects,
                                                                         fact.objects)  # fmt: skip
    return _norm(question.anchor) in named and bool(other & question.gold)


def _norm(name: str) -> str:
    from curation.domain.names import normalize_name

    return normalize_name(name)


def rank_of_first(ids: Sequence[int], facts: dict[int, ClaimFact], question: Question) -> int:
    """The 1-based rank of the first right hit in the top CUTOFF, 0 when none."""
    return next((i for i, c in enumerate(ids[:CUTOFF], 1) if right(facts.get(c), question)), 0)


def ask(
    group_id: str, asked: list[Question], *, baselines: bool = True
) -> tuple[dict[str, list[int]], list[float]]:
    """The first right rank of each question per system (and "answerable": 1 when a
    published claim holds its gold), and VERA's search latencies in ms. Without
    `baselines`, VERA alone."""
    from django.utils import timezone

    from retrieval.domain.query import Query
    from retrieval.services.search.pipeline import stage1_lists
    from retrieval.usecases import live_search, offered_models
    from tenants import rls
    from tenants.selectors import principal_system

    search, catalog = live_search(), offered_models()
    ranks: dict[str, list[int]] = {system: [] for system in SYSTEMS}
    latencies: list[float] = []
    with rls.tenant_context(principal_system("bench", group_ids=[group_id])):
        facts = claim_facts({q.predicate for q in asked})
        search(query=Query(text="warm up", k=CUTOFF), now=timezone.now(), record=False)
        for question in asked:
            query = Query(text=question.text, k=CUTOFF)
            started = time.perf_counter()
            result = search(query=query, now=timezone.now(), record=False)
            latencies.append((time.perf_counter() - started) * 1000)
            ranks["VERA"].append(rank_of_first([h.claim_id for h in result.hits], facts, question))
            if baselines:
                lists = stage1_lists(query, embedder=catalog).rankings
                for system, ids in (
                    ("BM25", lists["fulltext"]),
                    ("dense", lists.get("vector", [])),
                ):
                    ranks[system].append(rank_of_first(ids, facts, question))
        answerable = [any(right(f, q) for f in facts.values()) for q in asked]
    ranks["answerable"] = [int(a) for a in answerable]
    return ranks, latencies


def scores(ranks: Sequence[int]) -> dict[str, float]:
    """hit@1, hit@3 and MRR@10 of first-right ranks (0: none in the top 10)."""
    n = len(ranks) or 1
    return {
        "n": len(ranks),
        "hit@1": sum(r == 1 for r in ranks) / n,
        "hit@3": sum(0 < r <= 3 for r in ranks) / n,
        "mrr@10": sum(1 / r for r in ranks if r) / n,
    }


def figures(asked: list[Question], ranks: dict[str, list[int]]) -> dict[str, Any]:
    """Scores per system, by relation, overall, by source kind and by question form."""
    groups: dict[str, list[int]] = defaultdict(list)
    for index, question in enumerate(asked):
        keys = [question.relation, "overall", f"form: {question.form}"]
        if question.domain == OPS:
            keys.append("with runbook" if question.runbook else "CMDB only")
        for key in keys:
            groups[key].append(index)
    out: dict[str, Any] = {}
    for system in SYSTEMS:
        if len(ranks[system]) == len(asked):
            out[system] = {
                key: scores([ranks[system][i] for i in idx]) for key, idx in groups.items()
            }
    out["answerable"] = {
        key: sum(ranks["answerable"][i] for i in idx) for key, idx in groups.items()
    }
    return out


def merged_services(estate: Estate) -> list[str]:
    """Estate services whose names ended up on one entity with another service's name."""
    from curation.models import EntityAlias

    services = {_norm(s.name) for s in estate.services}
    on_entity: dict[int, set[str]] = defaultdict(set)
    for entity_id, alias in EntityAlias.objects.values_list("entity_id", "alias_norm"):
        if alias in services:
            on_entity[entity_id].add(alias)
    return sorted(" ~ ".join(sorted(names)) for names in on_entity.values() if len(names) > 1)


def report(domain: str, plain: dict[str, Any], ontology: dict[str, Any] | None,
           latencies: list[float]) -> None:  # fmt: skip
    """One domain's table: a row per relation (and overall); hit@1 and MRR@10 of VERA out
    of the box, VERA with the admin's ontology, BM25 and dense, side by side."""
    columns = [("VERA", plain["VERA"]), ("+ontology", (ontology or plain)["VERA"]),
               ("BM25", plain["BM25"]), ("dense", plain["dense"])]  # fmt: skip
    head = "".join(f" | {name:<9} h@1  MRR" for name, _ in columns)
    print(f"\n[{domain}]" + ("" if ontology else " (the built-in ontology is its admin's)"))
    print(f"{'relation':<16}{'n':>4} {'gold':>4}{head}")
    relations = sorted(k for k in plain["VERA"] if k.lstrip("~").isupper())
    for key in (*relations, "overall", "CMDB only", "with runbook"):
        if key not in plain["VERA"]:
            continue
        cells = "".join(
            f" | {'':<9} {table[key]['hit@1']:.2f} {table[key]['mrr@10']:.2f}"
            for _, table in columns
        )
        print(f"{key:<16}{plain['VERA'][key]['n']:>4} {plain['answerable'][key]:>4}{cells}")
    p50 = statistics.median(latencies)
    p95 = statistics.quantiles(latencies, n=20)[-1] if len(latencies) > 1 else p50
    print(f"VERA search latency: p50 {p50:.1f} ms, p95 {p95:.1f} ms ({len(latencies)} searches)")
    forms = sorted((k for k in plain["VERA"] if k.startswith("form: ")),
                   key=lambda k: plain["VERA"][k]["hit@1"])  # fmt: skip
    print(
        "weakest forms out of the box (hit@1): "
        + "; ".join(
            f"{k.removeprefix('form: ')!r} {plain['VERA'][k]['hit@1']:.2f}" for k in forms[:4]
        )
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--domains", default=",".join(DOMAINS),
                        help=f"comma-separated, of {', '.join(DOMAINS)}")  # fmt: skip
    parser.add_argument("--services", type=int, default=300, help="the ops estate's size")
    parser.add_argument("--size", type=int, default=200, help="each other domain's items")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--questions-per-relation", type=int, default=100)
    parser.add_argument("--phrasings", choices=sorted(PHRASINGS), default="default")
    parser.add_argument("--embedder", choices=["minilm", "hashing", "e5"], default="minilm")
    parser.add_argument("--reuse", action="store_true", help="keep an earlier run's data")
    parser.add_argument("--out", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args()
    chosen = [name.strip() for name in args.domains.split(",") if name.strip()]
    if unknown := set(chosen) - set(DOMAINS):
        parser.error(f"unknown domains {sorted(unknown)}: choose from {', '.join(DOMAINS)}")
    os.environ["VERA_EMBEDDER__PROVIDER"] = args.embedder
    os.environ.setdefault("VERA_BENCH__DB", "vera_bench_questions")
    os.environ.setdefault("VERA_MEMORY__GRAPH_NAME", "vera_bench_questions")
    setup_django(fresh=not args.reuse)
    from tenants import rls
    from tenants.selectors import principal_system

    out: dict[str, Any] = {"seed": args.seed, "phrasings": args.phrasings,
                           "embedder": args.embedder, "domains": {}}  # fmt: skip
    for name in chosen:
        per = args.questions_per_relation
        if name == OPS:
            estate = Estate.generate(services=args.services, seed=args.seed)
            workspaces = [ingest_ops(estate, reuse=args.reuse)]
            asked = ops_questions(estate, per_relation=per, phrasings=args.phrasings)
        else:
            domain = GENERATORS[name](size=args.size, seed=args.seed)
            if args.phrasings not in domain.phrasings:
                print(f"\n[{name}] has no {args.phrasings!r} phrasings: skipped")
                continue
            workspaces = [ingest_domain(domain, condition, reuse=args.reuse)
                          for condition in ("plain", "ontology")]  # fmt: skip
            asked = domain_questions(domain, per_relation=per, phrasings=args.phrasings)
        analyze()
        tables, latencies = [], []
        for index, workspace in enumerate(workspaces):
            ranks, timed = ask(workspace.group_id, asked, baselines=index == 0)
            tables.append(figures(asked, ranks))
            latencies += timed
        seconds = sum(workspace.seconds for workspace in workspaces)
        print(f"\n{name}: {len(asked)} questions ({args.phrasings} phrasings, embedder "
              f"{args.embedder}); ingest + index {seconds:.0f} s")  # fmt: skip
        if name == OPS:
            with rls.tenant_context(principal_system("bench", group_ids=[workspaces[0].group_id])):
                merged = merged_services(estate)
            print(f"services sharing an entity with another: {len(merged)} {merged[:6]}")
        report(name, tables[0], tables[1] if len(tables) > 1 else None, latencies)
        out["domains"][name] = {
            "plain": tables[0], "ontology": tables[-1],
            "latency_ms": {"p50": statistics.median(latencies),
                           "p95": statistics.quantiles(latencies, n=20)[-1]},
        }  # fmt: skip
    if args.out:
        args.out.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
