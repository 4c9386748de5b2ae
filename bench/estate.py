"""A generated service estate for benchmarks: a CMDB export and prose runbooks (seeded).

N services with kebab-case names (`billing-api`, `ledger-db`, `stock-notify-queue`),
among them pairs that entity linking must keep apart: the same words in another order
(`stock-notify-queue` / `notify-stock-queue`), singular and plural (`order-api` /
`orders-api`) and a suffix (`billing-api` / `billing-api-v2`). Each service has a host,
an owner team, 1-3 dependencies, a version, a region, a language, an environment and a
status. `write` puts a CMDB export (a JSON list, the columns `DEFAULT_CMDB_MAPPING`
reads) and Markdown runbooks for half of the services (prose stating some of the same
facts, plus operational text) into a folder. The same seed and size give the same
estate on every run.
"""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.ops_corpus import REGIONS

WORDS = (
    "payments", "billing", "ledger", "checkout", "inventory", "stock", "notify", "orders",
    "cart", "search", "auth", "identity", "fraud", "risk", "catalog", "pricing", "shipping",
    "invoice", "refunds", "settlement", "kyc", "onboarding", "events", "metrics", "alerting",
    "config", "secrets", "geo", "routing", "warehouse", "returns", "coupons", "reviews",
    "support", "sessions", "webhooks", "exports", "media", "profile", "loyalty", "tax",
    "audit", "reporting", "email", "sms", "tracking",
)  # fmt: skip
KINDS = (
    "api", "db", "worker", "queue", "gateway", "web", "service", "scheduler", "cache",
    "consumer", "exporter", "proxy", "sync", "ingest", "cron",
)  # fmt: skip
PLURALS = ("payments", "orders", "refunds", "returns", "coupons", "reviews", "sessions",
           "webhooks", "exports", "events", "metrics")  # fmt: skip
SUFFIXES = ("v2", "canary", "eu", "us", "internal", "legacy")
SHARED_TEAMS = ("Core Infrastructure Team", "Data Platform Team", "Site Reliability Team")
LANGUAGES = ("Go", "Python", "Java", "Kotlin", "Rust", "TypeScript", "Ruby", "Scala", "C#",
             "Elixir")  # fmt: skip
ENVIRONMENTS = ("production",) * 7 + ("staging",) * 2 + ("qa",)
STATUSES = ("operational",) * 8 + ("degraded", "maintenance")
# The attribute holding each relation's objects (its CMDB column: `location` for region).
ATTRIBUTES = {
    "RUNS_ON": "host", "OWNED_BY": "owner", "DEPENDS_ON": "depends_on",
    "HAS_VERSION": "version", "HOSTED_IN": "region", "WRITTEN_IN": "language",
    "DEPLOYED_TO": "environment",
}  # fmt: skip


@dataclass(frozen=True)
class Service:
    """One configuration item and its current facts."""

    ci: str
    name: str
    host: str
    owner: str
    depends_on: tuple[str, ...]
    version: str
    region: str
    language: str
    environment: str
    status: str
    runbook: bool

    def objects(self, predicate: str) -> tuple[str, ...]:
        """The object names of this service's current `predicate` facts."""
        value = getattr(self, ATTRIBUTES[predicate])
        return tuple(value) if isinstance(value, tuple) else (value,)

    def record(self) -> dict[str, object]:
        """The CMDB export row: an id distinct per record and the mapped columns."""
        return {
            "id": self.ci, "name": self.name, "type": "service", "host": self.host,
            "owner": self.owner, "depends_on": list(self.depends_on), "version": self.version,
            "location": self.region, "language": self.language,
            "environment": self.environment, "status": self.status,
        }  # fmt: skip


def _pair_names(rng: random.Random, count: int) -> list[str]:
    """Hard pairs, both names of each: reordered words, singular/plural, a suffix."""
    names: list[str] = []
    for index in range(count):
        kind = rng.choice(KINDS)
        if index % 3 == 0:
            a, b = rng.sample(WORDS, 2)
            names += [f"{a}-{b}-{kind}", f"{b}-{a}-{kind}"]
        elif index % 3 == 1:
            plural = rng.choice(PLURALS)
            names += [f"{plural}-{kind}", f"{plural.removesuffix('s')}-{kind}"]
        else:
            base = f"{rng.choice(WORDS)}-{kind}"
            names += [base, f"{base}-{rng.choice(SUFFIXES)}"]
    return names


def service_names(rng: random.Random, count: int) -> list[str]:
    """`count` distinct names; about a fifth of them in hard pairs."""
    names = dict.fromkeys(_pair_names(rng, max(1, count // 10)))
    while len(names) < count:
        if rng.random() < 0.8:
            names.setdefault(f"{rng.choice(WORDS)}-{rng.choice(KINDS)}")
        else:
            a, b = rng.sample(WORDS, 2)
            names.setdefault(f"{a}-{b}-{rng.choice(KINDS)}")
    chosen = list(names)[:count]
    rng.shuffle(chosen)
    return chosen


def _host(rng: random.Random, name: str, environment: str) -> str:
    if environment != "production":
        return f"k8s-{ {'staging': 'stg'}.get(environment, environment) }-{rng.randint(1, 4)}"
    pool = rng.random()
    if pool < 0.55:
        return f"k8s-prod-{rng.randint(1, 12)}"
    if pool < 0.85:
        return f"vm-{name[:3]}-{rng.randint(1, 4):02d}"
    return f"gke-{rng.choice(('eu', 'us', 'ap'))}-{rng.randint(1, 3)}"


def _team(rng: random.Random, name: str) -> str:
    """Mostly the team of the name's first word; some shared or another domain's team."""
    draw = rng.random()
    if draw < 0.15:
        return rng.choice(SHARED_TEAMS)
    word = rng.choice(WORDS) if draw < 0.35 else name.split("-")[0]
    return f"{word.title()} Team"


@dataclass(frozen=True)
class Estate:
    """The services of an imaginary company, generated from a seed."""

    services: tuple[Service, ...]
    seed: int

    @classmethod
    def generate(cls, *, services: int, seed: int) -> Estate:
        """`services` services with their facts; half of them (at random) get a runbook."""
        rng = random.Random(seed)  # noqa: S311 - reproducible test data, not secrets
        names = service_names(rng, services)
        with_runbook = set(rng.sample(names, len(names) // 2))
        built = []
        for index, name in enumerate(names):
            environment = rng.choice(ENVIRONMENTS)
            others = [other for other in names if other != name]
            built.append(Service(
                ci=f"CI{100_000 + index * 37}", name=name,
                host=_host(rng, name, environment), owner=_team(rng, name),
                depends_on=tuple(rng.sample(others, min(len(others), rng.randint(1, 3)))),
                version=f"{rng.randint(0, 9)}.{rng.randint(0, 40)}.{rng.randint(0, 20)}",
                region=rng.choice(REGIONS), language=rng.choice(LANGUAGES),
                environment=environment, status=rng.choice(STATUSES),
                runbook=name in with_runbook,
            ))  # fmt: skip
        return cls(services=tuple(built), seed=seed)

    def write(self, folder: Path) -> tuple[Path, Path]:
        """Write `cmdb/cmdb.json` and `runbooks/*.md` under a fresh `folder`; their paths."""
        shutil.rmtree(folder, ignore_errors=True)
        cmdb, runbooks = folder / "cmdb" / "cmdb.json", folder / "runbooks"
        cmdb.parent.mkdir(parents=True)
        runbooks.mkdir()
        records = [service.record() for service in self.services]
        cmdb.write_text(json.dumps(records, indent=1), encoding="utf-8")
        names = [service.name for service in self.services]
        for service in self.services:
            if service.runbook:
                rng = random.Random(f"{self.seed}:runbook:{service.name}")  # noqa: S311
                text = runbook(rng, service, names)
                (runbooks / f"{service.name}.md").write_text(text, encoding="utf-8")
        return cmdb, runbooks


def _listed(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


# Prose for each fact: sentences the rule-based extractor reads as a relation, and
# sentences that only a reader (or a passage search) gets the fact from.
PROSE: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "RUNS_ON": (
        (
            "The {s} runs on {o}.",
            "{s} currently runs on {o}, next to a few batch jobs.",
            "In {env}, {s} runs on {o}.",
        ),
        (
            "It is scheduled on {o}; drain that node before maintenance.",
            "You will find the pods of {s} on {o}.",
        ),
    ),
    "OWNED_BY": (
        ("{s} is owned by the {o}.", "The {s} is owned by the {o} and reviewed quarterly."),
        ("Questions about {s} go to the {o}.", "Page the {o} if the error budget burns."),
    ),
    "DEPENDS_ON": (
        ("{s} depends on {o}.", "The {s} depends on {o}; a failure there shows up here."),
        ("Upstream: {o}.", "If {o} is slow, expect {s} to back up within minutes."),
    ),
    "HOSTED_IN": (
        ("{s} is hosted in {o}.", "The {s} is hosted in {o} behind the regional balancer."),
        ("Traffic for {s} is served from {o}.", "All replicas sit in {o}."),
    ),
    "WRITTEN_IN": (
        ("{s} is written in {o}.", "The {s} is written in {o} and built by the shared CI."),
        ("The codebase is {o}; follow the house style guide.",),
    ),
}
OPERATIONS = (
    "If the p99 latency alert of {s} fires, scale the deployment to {n} replicas and watch "
    "the error rate for ten minutes.",
    "Restarts of {s} are safe during business hours; announce them in the incident channel.",
    "Connection pool exhaustion shows up as timeouts in {s}; raise the pool to {n}.",
    "Dashboards for {s} live in Grafana under the service folder; the SLO is 99.9%.",
    "Before a failover, check the replication lag of {other} and tell its owners.",
    "Logs of {s} are kept for {n} days; older logs are in the archive bucket.",
    "A stuck {s} consumer is fixed by resetting its offset to the last committed one.",
    "When {other} returns errors, {s} retries {n} times with backoff, then sheds load.",
    "Feature flags for {s} are read at start-up: restart after changing one.",
    "Certificates of {s} renew automatically {n} days before they expire.",
)
ALERTS = (
    "{s} p99 latency above {ms} ms for 10 minutes: page the on-call.",
    "{s} error rate above 2% for 5 minutes: check the last deploy first.",
    "{s} queue depth above {n}000 messages: scale the workers.",
    "{s} pod restarts above {n} in an hour: look for OOM kills.",
    "{s} disk usage above 85%: rotate the logs or grow the volume.",
)
CONTACTS = (
    "Escalate {s} incidents to the {team} on-call; the channel is #{s}.",
    "The {team} reviews changes to {s}; ask in #{s} before a risky deploy.",
)
DEPLOYS = (
    "Version {version} of {s} went out to {env} last week; roll back with the pipeline.",
    "The current release of {s} is {version} ({env}). Release notes are in the changelog.",
    "Deploys of {s} to {env} need a green build and one approval; {version} is the latest.",
)
TITLES = ("{s} runbook", "Runbook: {s}", "{s} operations guide")


def _fact_sentence(rng: random.Random, service: Service, predicate: str) -> str:
    cue, plain = PROSE[predicate]
    objects = service.objects(predicate)
    template = rng.choice(cue if rng.random() < 0.7 else plain)
    return template.format(s=service.name, o=_listed(objects), env=service.environment)


def runbook(rng: random.Random, service: Service, names: Sequence[str]) -> str:
    """A Markdown runbook stating two to five of the service's facts among other text."""
    stated = rng.sample(sorted(PROSE), rng.randint(2, 5))
    facts = [_fact_sentence(rng, service, predicate) for predicate in stated]
    words = {"s": service.name, "n": rng.choice((3, 4, 6, 12, 30)), "other": rng.choice(names),
             "ms": rng.choice((250, 500, 1000)), "team": service.owner,
             "version": service.version, "env": service.environment}  # fmt: skip
    ops = [line.format(**words) for line in rng.sample(OPERATIONS, rng.randint(3, 6))]
    if rng.random() < 0.3:  # a former home: the extractor must not read it as current
        ops.insert(0, f"{service.name} no longer runs on vm-old-{rng.randint(1, 9):02d}.")
    alerts = [line.format(**words) for line in rng.sample(ALERTS, rng.randint(2, 4))]
    title = rng.choice(TITLES).format(s=service.name)
    sections = {
        "Dependencies and placement": " ".join(facts[2:]) or "See the service catalog.",
        "Alerts": "\n".join(f"- {line}" for line in alerts),
        "Operations": "\n".join(f"- {line}" for line in ops),
        "Deploys": rng.choice(DEPLOYS).format(**words),
        "Contacts": rng.choice(CONTACTS).format(**words),
    }
    body = "\n\n".join(f"## {heading}\n\n{text}" for heading, text in sections.items())
    return f"# {title}\n\n{' '.join(facts[:2])}\n\n{body}\n"
