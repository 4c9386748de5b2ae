"""A synthetic operations knowledge base for benchmarks: vocabulary, facts and questions.

Services, hosts, teams, people, databases, regions and countries, combined into
facts of a dozen kinds (where a service runs, who owns it, what it depends on,
runbook passages, ...) and into questions an engineer would type. Everything is
drawn from a seeded generator, so the same seed and size give the same corpus and
questions on every run. People's given names and country names come from
`../shared/eval/entity_names` when it is there.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from bench.common import ROOT

NAMES = ROOT.parent / "shared" / "eval" / "entity_names"
FACTS_PER_SERVICE = 18
DOMAINS = (
    "payments", "ledger", "billing", "checkout", "inventory", "search", "auth", "identity",
    "notifications", "email", "sms", "fraud", "risk", "catalog", "pricing", "shipping",
    "orders", "cart", "recommendations", "analytics", "reporting", "audit", "media", "upload",
    "thumbnail", "video", "chat", "profile", "accounts", "loyalty", "rewards", "tax",
    "invoice", "refunds", "settlement", "kyc", "onboarding", "scheduler", "events", "stream",
    "metrics", "logs", "tracing", "alerting", "config", "feature-flags", "secrets", "dns",
    "geo", "maps", "routing", "warehouse", "returns", "subscriptions", "coupons", "reviews",
    "support", "translation", "consent", "sessions", "webhooks", "exports",
)  # fmt: skip
KINDS = (
    "api", "service", "worker", "gateway", "consumer", "scheduler", "web", "sync", "exporter",
    "ingest", "router", "proxy",
)  # fmt: skip
VARIANTS = ("", "-v2", "-internal", "-legacy", "-batch", "-edge", "-eu", "-us")
REGIONS = (
    "eu-west-1", "eu-central-1", "eu-north-1", "us-east-1", "us-west-2", "ca-central-1",
    "sa-east-1", "ap-southeast-1", "ap-northeast-1", "ap-south-1",
)  # fmt: skip
ENVIRONMENTS = ("production", "production", "production", "staging", "qa", "sandbox")
POOLS = ("k8s", "vm", "bm", "gke", "eks", "edge")
ENGINES = {
    "pg": "PostgreSQL",
    "mysql": "MySQL",
    "redis": "Redis",
    "kafka": "Kafka",
    "es": "Elasticsearch",
    "mongo": "MongoDB",
    "cassandra": "Cassandra",
    "clickhouse": "ClickHouse",
}
SHARED_TEAMS = (
    "Core Infrastructure",
    "Data Platform",
    "Security Engineering",
    "Developer Experience",
    "Site Reliability",
)
SURNAMES = (
    "Okafor", "Lindqvist", "Moreau", "Nakamura", "Silva", "Kowalski", "Haddad", "Fischer",
    "O'Brien", "Rossi", "Novak", "Petrov", "Jansen", "Dubois", "Tanaka", "Mensah", "Garcia",
    "Ivanova", "Schmidt", "Kaur", "Nguyen", "Andersson", "Costa", "Yilmaz", "Murphy",
    "Bianchi", "Horvath", "Eriksen", "Adeyemi", "Larsen", "Kim", "Park", "Chen", "Singh",
    "Alvarez", "Weber",
)  # fmt: skip
FALLBACK_GIVEN = ("alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan")
FALLBACK_COUNTRIES = ("Austria", "Belgium", "Brazil", "Canada", "Denmark", "France", "Germany")
ROLES = ("tech lead", "engineering manager", "staff engineer", "SRE", "product owner")
ISSUES = (
    "connection pool exhaustion under burst traffic",
    "slow cold starts after a node drain",
    "stale DNS entries after a failover",
    "clock skew breaking token validation",
    "a memory leak in the JSON encoder under high cardinality",
    "certificate renewal failing when the ACME endpoint is rate limited",
    "consumer lag when a partition rebalances",
)
ACTIONS = (
    "scale the deployment to {n} replicas",
    "drain the node and let the scheduler reschedule the pods",
    "flush the {db} cache and warm it from the last snapshot",
    "fail over to the standby in {region}",
    "roll back to the previous release with the deploy pipeline",
    "raise the connection pool to {n} and watch the error budget",
)


@dataclass(frozen=True)
class Fact:
    """One claim to load: subject, predicate, object (entity or literal), text and source."""

    predicate: str
    subject: str
    fact: str
    snippet: str
    source: str
    object_entity: str | None = None
    object_literal: str | None = None
    valid_from: dt.datetime = field(default=dt.datetime(2024, 1, 1, tzinfo=dt.UTC))
    previous: Fact | None = None  # an older revision, loaded as superseded by this one


# (name, connector kind, trust tier): tiers 1 and 2 publish at once.
SOURCES = (
    ("cmdb", "cmdb", 1),
    ("service-catalog", "markdown", 1),
    ("ops-runbooks", "confluence", 2),
    ("ops-tickets", "jira", 2),
    ("incident-channel", "slack", 2),
)


def episode_url(source: str, service: str) -> tuple[str, str]:
    """The external id and URL of the artifact of `source` that talks about `service`."""
    urls = {
        "cmdb": f"https://cmdb.example.internal/ci/{service}",
        "service-catalog": f"https://git.example.internal/ops/catalog/blob/main/{service}.md",
        "ops-runbooks": f"https://wiki.example.internal/display/OPS/{service}+runbook",
        "ops-tickets": f"https://jira.example.internal/browse/OPS?component={service}",
        "incident-channel": f"https://example.slack.com/archives/C0INCIDENT?q={service}",
    }
    return f"{source}/{service}", urls[source]


def _given_names() -> list[str]:
    path = NAMES / "nicknames.csv"
    if not path.exists():
        return list(FALLBACK_GIVEN)
    with path.open(encoding="utf-8") as handle:
        return sorted({row["name1"] for row in csv.DictReader(handle)})


def _countries() -> list[str]:
    path = NAMES / "country_aliases.dev.jsonl"
    if not path.exists():
        return list(FALLBACK_COUNTRIES)
    names = []
    for line in path.open(encoding="utf-8"):
        aliases = json.loads(line)["aliases"]
        names += [a["text"] for a in aliases if a["lang"] == "en" and a["kind"] == "name"][:1]
    return names


def _more_services(count: int, *, seed: int) -> list[str]:
    """`count` service names past the base vocabulary's (`DOMAINS` x `KINDS` x `VARIANTS`):
    its names numbered from 2 ("payments-api-v2-3"), shuffled by `seed` with a generator
    of their own, so a corpus the base names cover is what it always was."""
    if count <= 0:
        return []
    base = len(DOMAINS) * len(KINDS) * len(VARIANTS)
    names = [
        f"{d}-{k}{v}-{n}"
        for n in range(2, 2 + -(-count // base))
        for d in DOMAINS
        for k in KINDS
        for v in VARIANTS
    ]
    random.Random(f"{seed}:more-services").shuffle(names)  # noqa: S311 - reproducible test data
    return names[:count]


class Vocabulary:
    """The named things of an imaginary company's infrastructure (seeded): at least
    `services` services (5,952 unless more are asked for)."""

    def __init__(self, *, seed: int = 7, services: int = 0) -> None:
        rng = random.Random(seed)  # noqa: S311 - reproducible test data, not secrets
        names = [f"{d}-{k}{v}" for d in DOMAINS for k in KINDS for v in VARIANTS]
        rng.shuffle(names)
        self.services = names + _more_services(services - len(names), seed=seed)
        self.hosts = [
            f"{pool}-{env}-{region.replace('-', '')}-{n:02d}"
            for pool in POOLS
            for env in ("prod", "stg", "qa")
            for region in REGIONS
            for n in range(1, 9)
        ]
        self.databases = [
            f"{short}-{domain}-{n:02d}" for short in ENGINES for domain in DOMAINS for n in (1, 2)
        ]
        self.teams = [f"{d.replace('-', ' ').title()} Team" for d in DOMAINS] + list(SHARED_TEAMS)
        given = _given_names()
        self.people = sorted(
            {f"{rng.choice(given).title()} {rng.choice(SURNAMES)}" for _ in range(600)}
        )
        self.countries = _countries()

    def entities(self) -> dict[str, str]:
        """Every entity name and its type."""
        kinds = {
            "service": self.services,
            "host": self.hosts,
            "database": self.databases,
            "team": self.teams,
            "person": self.people,
            "region": list(REGIONS),
            "country": self.countries,
        }
        return {name: kind for kind, names in kinds.items() for name in names}

    def team_of(self, service: str) -> str:
        domain = next(d for d in sorted(DOMAINS, key=len, reverse=True) if service.startswith(d))
        return f"{domain.replace('-', ' ').title()} Team"


Family = Callable[[random.Random, Vocabulary, str], Fact]


def _runs_on(rng: random.Random, v: Vocabulary, svc: str) -> Fact:
    host, env, region = rng.choice(v.hosts), rng.choice(ENVIRONMENTS), rng.choice(REGIONS)
    return Fact(
        "RUNS_ON", svc, f"{svc} runs on {host}.",
        f"{svc} ({env}) is scheduled on {host} in {region}; the node pool is managed by "
        f"{rng.choice(SHARED_TEAMS)}.", "cmdb", object_entity=host,
    )  # fmt: skip


def _owned_by(rng: random.Random, v: Vocabulary, svc: str) -> Fact:
    team = v.team_of(svc) if rng.random() < 0.8 else rng.choice(v.teams)
    person = rng.choice(v.people)
    return Fact(
        "OWNED_BY", svc, f"{svc} is owned by the {team}.",
        f"Service owner: {team}. Escalations go to {person} ({rng.choice(ROLES)}); "
        f"the team channel is #{team.lower().replace(' ', '-')}.",
        rng.choice(("service-catalog", "cmdb")), object_entity=team,
    )  # fmt: skip


def _depends_on(rng: random.Random, v: Vocabulary, svc: str) -> Fact:
    other = rng.choice(v.services[: max(50, len(v.services) // 4)])
    proto = rng.choice(("gRPC", "HTTP/JSON", "Kafka events", "a shared queue"))
    return Fact(
        "DEPENDS_ON", svc, f"{svc} depends on {other}.",
        f"{svc} calls {other} over {proto}; the client timeout is {rng.choice((200, 500, 800))} "
        f"ms with {rng.randint(0, 3)} retries and a circuit breaker.",
        rng.choice(("service-catalog", "ops-runbooks")), object_entity=other,
    )  # fmt: skip


def _deployed_in(rng: random.Random, v: Vocabulary, svc: str) -> Fact:
    region, env = rng.choice(REGIONS), rng.choice(ENVIRONMENTS)
    return Fact(
        "DEPLOYED_IN", svc, f"{svc} is deployed in {region} ({env}).",
        f"The {env} deployment of {svc} lives in {region} behind the regional load balancer; "
        f"traffic is split by latency-based DNS.", "cmdb", object_entity=region,
    )  # fmt: skip


def _version(rng: random.Random, v: Vocabulary, svc: str) -> Fact:
    version = f"{rng.randint(1, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 12)}"
    env = rng.choice(ENVIRONMENTS)
    return Fact(
        "HAS_VERSION", svc, f"{svc} runs version {version} in {env}.",
        f"Release {version} of {svc} was rolled out to {env} by {rng.choice(v.people)}; "
        f"it fixes {rng.choice(ISSUES)}.", rng.choice(("cmdb", "ops-tickets")),
        object_literal=version,
    )  # fmt: skip


def _on_call(rng: random.Random, v: Vocabulary, svc: str) -> Fact:
    person = rng.choice(v.people)
    return Fact(
        "ON_CALL", svc, f"{person} is on call for {svc}.",
        f"Primary on-call for {svc}: {person}; secondary: {rng.choice(v.people)}. Page through "
        f"the {v.team_of(svc)} rotation.", rng.choice(("incident-channel", "service-catalog")),
        object_entity=person,
    )  # fmt: skip


def _database(rng: random.Random, v: Vocabulary, svc: str) -> Fact:
    db = rng.choice(v.databases)
    engine = ENGINES[db.split("-", 1)[0]]
    return Fact(
        "USES_DATABASE", svc, f"{svc} stores its data in {db}.",
        f"{db} ({engine} {rng.randint(5, 17)}) holds the {svc} data; backups run nightly at "
        f"{rng.randint(0, 5):02d}:00 UTC and are kept for {rng.choice((7, 14, 30))} days.",
        "cmdb", object_entity=db,
    )  # fmt: skip


def _port(rng: random.Random, v: Vocabulary, svc: str) -> Fact:
    port = str(rng.choice((443, 8080, 8443, 9090, 50051, 6379, 5432, 3000)))
    return Fact(
        "LISTENS_ON", svc, f"{svc} listens on port {port}.",
        f"{svc} exposes its API on port {port}; health checks hit /healthz every "
        f"{rng.choice((5, 10, 15))} seconds.", "cmdb", object_literal=port,
    )  # fmt: skip


def _residency(rng: random.Random, v: Vocabulary, svc: str) -> Fact:
    country, region = rng.choice(v.countries), rng.choice(REGIONS)
    return Fact(
        "STORES_DATA_FOR", svc, f"{svc} keeps customer data for {country} in {region}.",
        f"For data residency, {svc} writes personal data of customers in {country} only to "
        f"{region}; exports need a ticket approved by Security Engineering.",
        rng.choice(("service-catalog", "ops-tickets")), object_entity=country,
    )  # fmt: skip


def _runbook(rng: random.Random, v: Vocabulary, svc: str) -> Fact:
    n, db, region = rng.choice((3, 6, 12, 24)), rng.choice(v.databases), rng.choice(REGIONS)
    action = rng.choice(ACTIONS).format(n=n, db=db, region=region)
    step = f"If p99 latency of {svc} rises above {rng.choice((250, 500, 1000))} ms, {action}."
    return Fact(
        "HAS_RUNBOOK_STEP", svc, step,
        f"{step} Known issue: {rng.choice(ISSUES)}. Restarts are safe during business hours; "
        f"never fail over {db} without paging {v.team_of(svc)}.", "ops-runbooks",
        object_literal=action,
    )  # fmt: skip


def _slo(rng: random.Random, v: Vocabulary, svc: str) -> Fact:
    slo, ms = rng.choice(("99.9", "99.95", "99.5", "99.99")), rng.choice((100, 250, 400, 800))
    return Fact(
        "HAS_SLO", svc, f"{svc} has an availability SLO of {slo}% and a p99 objective of {ms} ms.",
        f"The error budget of {svc} is reviewed monthly by the {v.team_of(svc)}; burning more "
        f"than half of it in a week freezes releases.",
        rng.choice(("service-catalog", "ops-runbooks")), object_literal=f"{slo}%",
    )  # fmt: skip


def _incident(rng: random.Random, v: Vocabulary, svc: str) -> Fact:
    issue, region = rng.choice(ISSUES), rng.choice(REGIONS)
    return Fact(
        "HAD_INCIDENT", svc, f"{svc} had an incident in {region}: {issue}.",
        f"Postmortem: {svc} degraded in {region} for {rng.randint(5, 90)} minutes because of "
        f"{issue}. Follow-up owner: {rng.choice(v.people)}.",
        rng.choice(("incident-channel", "ops-tickets")), object_literal=issue,
    )  # fmt: skip


# Weights: location, ownership and versions change most often, so they get revisions.
FAMILIES: tuple[tuple[Family, int], ...] = (
    (_runs_on, 12), (_owned_by, 8), (_depends_on, 14), (_deployed_in, 8), (_version, 8),
    (_on_call, 6), (_database, 10), (_port, 5), (_residency, 6), (_runbook, 10), (_slo, 6),
    (_incident, 7),
)  # fmt: skip
REVISED = {"RUNS_ON", "OWNED_BY", "HAS_VERSION", "ON_CALL"}


class Corpus:
    """`size` published facts over the first services of the vocabulary (about
    FACTS_PER_SERVICE each), ~5% with a revision."""

    def __init__(self, *, size: int, now: dt.datetime, seed: int = 7) -> None:
        self.size, self.now, self.seed = size, now, seed
        # About FACTS_PER_SERVICE facts per service at any size: past 107,000 facts the
        # vocabulary grows numbered services rather than piling facts on the same ones.
        count = max(1, size // FACTS_PER_SERVICE)
        self.vocabulary = Vocabulary(seed=seed, services=count)
        self.services = self.vocabulary.services[:count]

    def fact(self, index: int) -> Fact:
        """The `index`-th fact (the same one on every run)."""
        rng = random.Random(f"{self.seed}:{index}")  # noqa: S311 - reproducible test data
        service = self.services[index % len(self.services)]
        families, weights = zip(*FAMILIES, strict=True)
        family = rng.choices(families, weights)[0]
        valid_from = self.now - dt.timedelta(days=rng.uniform(0, 3 * 365))
        previous = None
        if rng.random() < 0.22:
            older = family(rng, self.vocabulary, service)
            if older.predicate in REVISED:
                started = valid_from - dt.timedelta(days=rng.uniform(14, 400))
                previous = replace(older, valid_from=started)
        current = family(rng, self.vocabulary, service)
        return replace(current, valid_from=valid_from, previous=previous)

    def questions(self, *, seed: int) -> list[str]:
        """Distinct questions about this corpus's services and things, shuffled by `seed`."""
        v = self.vocabulary
        per_service = (
            "which host runs {s}", "who owns {s}", "what does {s} depend on",
            "{s} version in production", "who is on call for {s}", "where does {s} store its data",
            "{s} runbook high latency", "what port does {s} listen on", "{s} availability SLO",
            "{s} data residency",
        )  # fmt: skip
        per_region = ("{s} incidents in {r}", "is {s} deployed in {r}")
        questions = {t.format(s=s) for s in self.services for t in per_service}
        questions |= {
            t.format(s=s, r=r) for s in self.services for t in per_region for r in REGIONS
        }
        questions |= {f"services running on {h}" for h in v.hosts}
        questions |= {f"backups of {db}" for db in v.databases}
        questions |= {f"services owned by the {t}" for t in v.teams}
        questions |= {f"{e} in {r}" for e in ENGINES.values() for r in REGIONS}
        questions |= {f"customer data for {c}" for c in v.countries}
        questions |= {f"what is {p} on call for" for p in v.people}
        ordered = sorted(questions)
        random.Random(seed).shuffle(ordered)  # noqa: S311 - reproducible test data
        return ordered
