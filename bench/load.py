"""HTTP load with faults: 8 clients of search, feedback and review decisions, three runs.

    env -u DATABASE_URL -u DATABASE_OWNER_URL -u REDIS_URL \\
        .venv/bin/python -m bench.load [--seconds 60] [--clients 8] [--fault-at 20]
                                       [--fault-for 20] [--embedder minilm|hashing]

Loopback only and bounded: every process is started here, on the test-profile servers
(a fresh `vera_bench_load` database, broker database 7) and a FalkorDB server of its
own for the graph, so the graph can be stopped without stopping the broker. As
`make run` runs VERA: gunicorn with the project's gunicorn.conf.py (2 workers x 4
threads), a Celery worker per lane (ingest, projection, interactive) and beat.

Before the runs: a tier-1 source of ops documents (services, clusters, owners) is
ingested and projected, and a tier-3 source fills the review queue. Each client is a
reviewer with an API key (search, feedback) and a browser session signed in through
the login page (decisions through the review portal's htmx endpoints, as the queue page
sends them). A client picks: a search (60 %), a vote on a hit of its last search (20 %)
or a decision on the next claim of its share of the queue (20 %; approve 2 : reject 1).

Three runs of `--seconds` each, every one while the ingest worker ingests a new tier-1
source and the projection worker projects it:

1. steady;
2. the graph server stopped (saving its data, as a restart does) at `--fault-at` s for
   `--fault-for` s; /healthz is read during the outage;
3. one gunicorn worker SIGKILLed at `--fault-at` s (the arbiter starts another).

Prints per run and operation: requests, requests/s, 5xx, other errors (4xx, transport
errors such as a connection reset by the killed worker), p50/p95/p99. Then, once the
outbox is drained: every accepted decision (200) checked in Postgres (claim status,
audit event) and in the index (an approved claim's document published, a rejected one
absent); every decision whose answer was lost in transport is either whole or absent,
never half done; every accepted vote stored; the graph holds every published claim.
Prints resident memory per process before the first run and after the last. Asserts
nothing about time; exits 1 when a 5xx was served or an accepted decision is missing.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import itertools
import logging
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from bench.common import child_process, lift_rate_limits, setup_django
from bench.search_latency import app_database_url, nearest_rank
from devtools.graph_server import GraphServer

PASSWORD = "load-bench-Passw0rd!"  # noqa: S105 - a throwaway bench user's, loopback only
WEB_WORKERS, WEB_THREADS = 2, 4
MIX = (("search", 0.6), ("feedback", 0.2), ("decision", 0.2))
TEAMS, CLUSTERS = 40, 60


# --- the corpus ---------------------------------------------------------------------------


def _ops_docs(folder: Path, *, first: int, count: int) -> None:
    """`count` service documents from svc-`first` on: where each runs, who owns it, a dependency."""
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(first, first + count):
        (folder / f"svc-{n:05d}.md").write_text(
            f"# svc-{n:05d}\n\nThe svc-{n:05d} runs on k8s-{n % CLUSTERS:02d}. "
            f"The svc-{n:05d} is owned by team-{n % TEAMS:02d}. "
            f"The svc-{n:05d} depends on svc-{(n * 7 + 3) % max(first + count, 1):05d}.\n",
            encoding="utf-8",
        )


def _runbooks(folder: Path, count: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(count):
        (folder / f"runbook-{n:05d}.md").write_text(
            f"# Runbook {n}\n\nThe batch-job-{n:05d} runs on worker-pool-{n % 30:02d}.\n",
            encoding="utf-8",
        )


# --- processes ----------------------------------------------------------------------------


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(stat.parent.name))
    return sorted(found)


def _rss_mib(pid: int) -> float:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _memory(processes: dict[str, subprocess.Popen[bytes]]) -> dict[str, float]:
    """Resident MiB of each process and its children (prefork pool, gunicorn workers)."""
    out = {}
    for name, process in processes.items():
        out[name] = _rss_mib(process.pid)
        for number, child in enumerate(_children(process.pid), 1):
            out[f"{name} child {number}"] = _rss_mib(child)
    return out


def _wait_healthy(base: str, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"gunicorn exited ({server.returncode}):\n{log.read_text()[-3000:]}")
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(f"{base}/healthz", timeout=5).status_code == 200:
                return
        time.sleep(0.25)
    raise SystemExit(f"gunicorn did not become healthy:\n{log.read_text()[-3000:]}")


# --- clients ------------------------------------------------------------------------------


@dataclasses.dataclass
class Sample:
    run: str
    op: str
    status: int  # 0: no answer (transport error)
    ms: float
    error: str = ""


@dataclasses.dataclass
class Ledger:
    """What the clients were told: the ground truth the database is checked against."""

    samples: list[Sample] = dataclasses.field(default_factory=list)
    accepted: dict[int, str] = dataclasses.field(default_factory=dict)  # claim -> action
    unanswered: dict[int, str] = dataclasses.field(default_factory=dict)
    refused: dict[int, int] = dataclasses.field(default_factory=dict)  # claim -> status
    votes: list[int] = dataclasses.field(default_factory=list)  # accepted hit ids
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)


class Client:
    """One reviewer: an API key for search and votes, a signed-in session for decisions."""

    def __init__(
        self, *, base: str, key: str, username: str, queue: list[tuple[int, int]], seed: int
    ) -> None:
        self.api = httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=60
        )
        self.web = httpx.Client(base_url=base, timeout=60)
        self.username, self.queue = username, queue
        self.rng = random.Random(seed)  # noqa: S311 - a workload, not a secret
        self.hits: list[int] = []

    def sign_in(self) -> None:
        self.web.get("/accounts/login/").raise_for_status()
        token = self.web.cookies["csrftoken"]
        answer = self.web.post(
            "/accounts/login/",
            data={"login": self.username, "password": PASSWORD, "csrfmiddlewaretoken": token},
        )
        if answer.status_code != 302:
            raise SystemExit(f"{self.username} could not sign in: {answer.status_code}")

    def close(self) -> None:
        self.api.close()
        self.web.close()

    def _search(self) -> httpx.Response:
        n = self.rng.randrange(1000)
        q = self.rng.choice(
            [
                f"where does svc-{n:05d} run",
                f"who owns svc-{n:05d}",
                f"what runs on k8s-{n % 60:02d}",
            ]
        )
        answer = self.api.get("/api/v1/search", params={"q": q})
        if answer.status_code == 200:
            self.hits = [hit["id"] for hit in answer.json()["hits"] if hit["id"]]
        return answer

    def _vote(self, ledger: Ledger) -> httpx.Response:
        hit = self.rng.choice(self.hits)
        answer = self.api.post(
            "/api/v1/feedback", json={"hit_id": hit, "helpful": self.rng.random() < 0.7}
        )
        if answer.status_code == 201:
            with ledger.lock:
                ledger.votes.append(hit)
        return answer

    def _decide(self, ledger: Ledger) -> httpx.Response:
        claim_id, version = self.queue.pop()
        action = "reject" if self.rng.random() < 1 / 3 else "approve"
        token = self.web.cookies["csrftoken"]
        data = {"version": str(version), "csrfmiddlewaretoken": token}
        if action == "reject":
            data["reason"] = "bench: wrong pool"
        try:
            answer = self.web.post(
                f"/review/claims/{claim_id}/{action}", data=data,
                headers={"HX-Request": "true", "X-CSRFToken": token},
            )  # fmt: skip
        except httpx.TransportError:
            with ledger.lock:
                ledger.unanswered[claim_id] = action
            raise
        with ledger.lock:
            if answer.status_code == 200:
                ledger.accepted[claim_id] = action
            else:
                ledger.refused[claim_id] = answer.status_code
        return answer

    def run(self, *, run: str, until: float, ledger: Ledger) -> None:
        while time.monotonic() < until:
            op = self.rng.choices([op for op, _ in MIX], [weight for _, weight in MIX])[0]
            if (op == "feedback" and not self.hits) or (op == "decision" and not self.queue):
                op = "search"
            started = time.perf_counter()
            try:
                if op == "search":
                    answer = self._search()
                elif op == "feedback":
                    answer = self._vote(ledger)
                else:
                    answer = self._decide(ledger)
            except httpx.TransportError as error:
                sample = Sample(run, op, 0, (time.perf_counter() - started) * 1000,
                                type(error).__name__)  # fmt: skip
            else:
                body = answer.text[:200] if answer.status_code >= 400 else ""
                sample = Sample(run, op, answer.status_code,
                                (time.perf_counter() - started) * 1000, body)  # fmt: skip
            with ledger.lock:
                ledger.samples.append(sample)


# --- faults -------------------------------------------------------------------------------


def _graph_outage(
    graph: GraphServer, base: str, *, at: float, lasting: float, started: float, log: list[str]
) -> None:
    time.sleep(max(0.0, started + at - time.monotonic()))
    stopping = time.monotonic() - started
    graph.stop(keep=True)
    log.append(f"graph server told to stop (saving) at {stopping:.1f} s, "
               f"gone at {time.monotonic() - started:.1f} s")  # fmt: skip
    time.sleep(lasting / 2)
    with contextlib.suppress(httpx.TransportError):
        health = httpx.get(f"{base}/healthz", timeout=10)
        log.append(
            f"/healthz during the outage: {health.status_code} "
            f"status={health.json()['status']} failing={health.json()['failing']}"
        )
    time.sleep(max(0.0, started + at + lasting - time.monotonic()))
    graph.start()
    log.append(f"graph server started again at {time.monotonic() - started:.1f} s")


def _kill_web_worker(
    server: subprocess.Popen[bytes], *, at: float, started: float, log: list[str]
) -> None:
    time.sleep(max(0.0, started + at - time.monotonic()))
    before = _children(server.pid)
    victim = before[0]
    os.kill(victim, signal.SIGKILL)
    log.append(f"gunicorn worker {victim} SIGKILLed at {time.monotonic() - started:.1f} s")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        now = [pid for pid in _children(server.pid) if pid not in before]
        if now:
            log.append(f"gunicorn started worker {now[0]} at {time.monotonic() - started:.1f} s")
            return
        time.sleep(0.1)
    log.append("gunicorn did not replace the worker within 60 s")


# --- checks -------------------------------------------------------------------------------


def _drained(principal: Any, sources: list[int], docs: int, cap_s: float) -> tuple[str, bool]:
    from curation.models import Episode, OutboxJob
    from tenants import rls

    deadline = time.monotonic() + cap_s
    while time.monotonic() < deadline:
        with rls.tenant_context(principal):
            episodes = Episode.objects.filter(source_id__in=sources).count()
            pending = OutboxJob.objects.filter(status="pending").count()
        if episodes >= docs and pending == 0:
            return f"drained: {episodes} episodes of the runs' sources, no outbox job pending", True
        time.sleep(1)
    return f"NOT drained after {cap_s:.0f} s: {episodes}/{docs} episodes, {pending} pending", False


def _check(ledger: Ledger, principal: Any) -> tuple[list[str], int]:
    """The report's lines, and how many decisions or votes were lost or left half done."""
    from curation.domain.tiers import ClaimStatus
    from curation.models import Claim, OutboxJob
    from curation.usecases import graph_projection
    from retrieval.models import Feedback, SearchDocument
    from tenants import rls
    from tenants.models import AuditEvent

    expected = {"approve": ClaimStatus.PUBLISHED, "reject": ClaimStatus.REJECTED}
    audit_action = {"approve": "review.approve", "reject": "review.reject"}
    lost: list[str] = []
    half: list[str] = []
    decided = {**ledger.unanswered, **ledger.accepted}
    with rls.tenant_context(principal):
        status = dict(Claim.objects.filter(pk__in=decided).values_list("pk", "status"))
        audited = set(
            AuditEvent.objects.filter(
                action__in=audit_action.values(), target_type="claim",
                target_id__in=[str(pk) for pk in decided],
            ).values_list("target_id", "action")
        )  # fmt: skip
        indexed = set(
            SearchDocument.objects.filter(claim_id__in=decided, status="published").values_list(
                "claim_id", flat=True
            )
        )
        votes = Feedback.objects.filter(hit_id__in=ledger.votes).count()
        published = Claim.objects.filter(status=ClaimStatus.PUBLISHED).count()
        dead = OutboxJob.objects.filter(status="dead").count()
    for claim_id, action in ledger.accepted.items():
        whole = (
            status.get(claim_id) == expected[action]
            and (str(claim_id), audit_action[action]) in audited
            and (claim_id in indexed) == (action == "approve")
        )
        if not whole:
            lost.append(f"#{claim_id} {action}: {status.get(claim_id)}, indexed "
                        f"{claim_id in indexed}")  # fmt: skip
    for claim_id, action in ledger.unanswered.items():
        untouched = status.get(claim_id) == ClaimStatus.PENDING_REVIEW and claim_id not in indexed
        applied = (
            status.get(claim_id) == expected[action]
            and (str(claim_id), audit_action[action]) in audited
            and (claim_id in indexed) == (action == "approve")
        )
        if not (untouched or applied):
            half.append(f"#{claim_id} {action}: {status.get(claim_id)}")
    graph = graph_projection().count_claims()
    unique_votes = len(set(ledger.votes))
    votes_lost = max(0, unique_votes - votes)
    return [
        f"decisions        {len(ledger.accepted)} accepted, {len(lost)} of them missing or "
        f"partial in Postgres/index {lost[:5]}",
        f"                 {len(ledger.unanswered)} unanswered (transport error): "
        f"{len(half)} half done {half[:5]}; refused: {len(ledger.refused)} "
        f"{dict(itertools.islice(ledger.refused.items(), 5))}",
        f"votes            {len(ledger.votes)} accepted ({unique_votes} distinct hits), "
        f"{votes} stored (a second vote on a hit replaces the first)",
        f"graph            {graph} claim edges for {published} published claims; "
        f"{dead} dead outbox jobs",
    ], len(lost) + len(half) + votes_lost + abs(graph - published) + dead


# --- report -------------------------------------------------------------------------------


def _report(ledger: Ledger, runs: list[str], seconds: float) -> int:
    header = (f"{'run':<18}{'op':<10}{'requests':>9}{'req/s':>8}{'5xx':>6}{'4xx':>6}"
              f"{'transp.':>8}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}")  # fmt: skip
    print(header)
    server_errors = 0
    for run in runs:
        for op in ("search", "feedback", "decision", "all"):
            rows = [s for s in ledger.samples if s.run == run and (op == "all" or s.op == op)]
            if not rows:
                continue
            ms = [s.ms for s in rows]
            errors5 = sum(1 for s in rows if s.status >= 500)
            errors4 = sum(1 for s in rows if 400 <= s.status < 500)
            transport = sum(1 for s in rows if s.status == 0)
            if op == "all":
                server_errors += errors5
            print(f"{run:<18}{op:<10}{len(rows):>9}{len(rows) / seconds:>8.1f}{errors5:>6}"
                  f"{errors4:>6}{transport:>8}{nearest_rank(ms, 50):>9.1f}"
                  f"{nearest_rank(ms, 95):>9.1f}{nearest_rank(ms, 99):>9.1f}")  # fmt: skip
    odd = [s for s in ledger.samples if s.status >= 400 or s.status == 0]
    for sample in odd[:8]:
        print(f"  e.g. {sample.run} {sample.op} {sample.status} {sample.error[:120]!r}")
    return server_errors


# --- main ---------------------------------------------------------------------------------


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=60.0, help="length of each run")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--fault-at", type=float, default=20.0, help="seconds into a run")
    parser.add_argument("--fault-for", type=float, default=20.0, help="graph outage length")
    parser.add_argument("--services", type=int, default=1000, help="documents indexed first")
    parser.add_argument("--per-run", type=int, default=400, help="documents ingested per run")
    parser.add_argument("--queue", type=int, default=3000, help="tier-3 claims to review")
    parser.add_argument("--embedder", default="minilm", choices=["minilm", "hashing"])
    return parser.parse_args()


def _people(workspace_pk: int, clients: int) -> list[tuple[str, str]]:
    """`clients` reviewers, each with a password and an API key; returns (username, key)."""
    from django.contrib.auth import get_user_model

    from tenants import rls
    from tenants.domain.scopes import Role
    from tenants.selectors import principal_for_user
    from tenants.usecases import api_key_issue, membership_grant

    users = get_user_model().objects
    admin = users.create_user(username="load-admin")
    membership_grant(user_id=admin.pk, scope_id=workspace_pk, role=Role.ADMIN)
    actor = principal_for_user(admin.pk, label="bench")
    people = []
    for n in range(clients):
        reviewer = users.create_user(username=f"load-reviewer-{n}", password=PASSWORD)
        membership_grant(user_id=reviewer.pk, scope_id=workspace_pk, role=Role.REVIEWER)
        with rls.tenant_context(actor):
            issued = api_key_issue(
                actor=actor, owner_id=reviewer.pk, scope_id=workspace_pk, name=f"load-{n}",
                role_ceiling=Role.REVIEWER,
            )  # fmt: skip
        people.append((reviewer.username, issued.plaintext))
    lift_rate_limits(workspace_pk)
    return people


def main() -> int:
    args = _arguments()
    logging.getLogger("httpx").setLevel(logging.WARNING)
    work = Path(tempfile.mkdtemp(prefix="vera-bench-load-"))
    graph = GraphServer(work / "graph")
    graph.start()
    os.environ.setdefault("VERA_BENCH__DB", "vera_bench_load")
    os.environ["VERA_MEMORY__GRAPH_BACKEND"] = "falkordb"
    os.environ["VERA_MEMORY__FALKORDB_URL"] = graph.url
    os.environ["VERA_MEMORY__GRAPH_NAME"] = "vera_bench_load"
    os.environ["VERA_EMBEDDER__PROVIDER"] = args.embedder
    os.environ["VERA_SOURCES__FILE_ROOTS"] = str(work)
    try:
        setup_django()
        return _scenario(args, work, graph)
    finally:
        graph.stop()


@dataclasses.dataclass
class Stage:
    """The workspace under load and what the runs share."""

    args: argparse.Namespace
    work: Path
    graph: GraphServer
    group_id: str
    principal: Any
    ledger: Ledger = dataclasses.field(default_factory=Ledger)
    notes: list[str] = dataclasses.field(default_factory=list)
    sources: list[int] = dataclasses.field(default_factory=list)

    def source(self, name: str, folder: Path, tier: int) -> int:
        from curation.usecases import source_create
        from tenants import rls

        with rls.tenant_context(self.principal):
            return source_create(
                actor=self.principal, group_id=self.group_id, name=name, kind="markdown",
                config={"root": str(folder)}, trust_tier=tier,
            ).pk  # fmt: skip


def _load(stage: Stage) -> list[tuple[int, int]]:
    """Index the services and fill the review queue; the queue's (claim, version)s."""
    from curation.domain.tiers import ClaimStatus
    from curation.models import Claim
    from curation.tasks import process_outbox
    from curation.usecases import ingest_now
    from tenants import rls

    args, work = stage.args, stage.work
    started = time.monotonic()
    _ops_docs(work / "services", first=0, count=args.services)
    _runbooks(work / "runbooks", args.queue)
    for name, tier in (("services", 1), ("runbooks", 3)):
        ingest_now(source_id=stage.source(name, work / name, tier), group_id=stage.group_id)
    while process_outbox():
        pass
    with rls.tenant_context(stage.principal):
        pending = list(
            Claim.objects.filter(status=ClaimStatus.PENDING_REVIEW)
            .order_by("pk")
            .values_list("pk", "version")
        )
        published = Claim.objects.filter(status=ClaimStatus.PUBLISHED).count()
    print(f"loaded           {published} published claims, {len(pending)} waiting for review, "
          f"in {time.monotonic() - started:.0f} s ({args.embedder})", flush=True)  # fmt: skip
    return pending


def _servers(
    stack: contextlib.ExitStack, work: Path, port: int
) -> dict[str, subprocess.Popen[bytes]]:
    """gunicorn, a Celery worker per lane and beat, as the application role."""
    env = {**os.environ, "DATABASE_URL": app_database_url(), "DJANGO_DEBUG": "false"}
    env.pop("DATABASE_OWNER_URL", None)
    logs = work / "logs"
    logs.mkdir()
    celery = [sys.executable, "-m", "celery", "-A", "vera"]
    processes = {}
    processes["gunicorn"] = stack.enter_context(child_process(
        [sys.executable, "-m", "gunicorn", "vera.wsgi:application", "-c", "gunicorn.conf.py",
         "--bind", f"127.0.0.1:{port}", "--workers", str(WEB_WORKERS),
         "--worker-class", "gthread", "--threads", str(WEB_THREADS), "--log-level", "warning"],
        env, logs / "gunicorn.log",
    ))  # fmt: skip
    for lane in ("ingest", "projection", "interactive"):
        processes[f"celery {lane}"] = stack.enter_context(child_process(
            [*celery, "worker", "-l", "info", "-Q", lane, "-n", f"load-{lane}@%h",
             "--concurrency", "1", "--without-gossip", "--without-mingle"],
            env, logs / f"{lane}.log",
        ))  # fmt: skip
    processes["celery beat"] = stack.enter_context(child_process(
        [*celery, "beat", "-l", "info", "-s", str(work / "beat-schedule")], env,
        logs / "beat.log",
    ))  # fmt: skip
    _wait_healthy(f"http://127.0.0.1:{port}", processes["gunicorn"], logs / "gunicorn.log")
    return processes


def _run(
    stage: Stage, number: int, run: str, clients: list[Client], base: str,
    web: subprocess.Popen[bytes],
) -> None:  # fmt: skip
    """One run: a new source to ingest, the clients for `--seconds`, its fault if any."""
    from curation.tasks import ingest_source

    args = stage.args
    folder = stage.work / f"run-{number}"
    _ops_docs(folder, first=args.services + number * args.per_run, count=args.per_run)
    stage.sources.append(stage.source(f"run-{number}", folder, 1))
    ingest_source.delay(source_id=stage.sources[-1], group_id=stage.group_id)
    began = time.monotonic()
    threads = [
        threading.Thread(
            target=client.run,
            kwargs={"run": run, "until": began + args.seconds, "ledger": stage.ledger},
        )
        for client in clients
    ]
    if run == "graph stopped":
        threads.append(threading.Thread(target=_graph_outage, kwargs={
            "graph": stage.graph, "base": base, "at": args.fault_at,
            "lasting": args.fault_for, "started": began, "log": stage.notes,
        }))  # fmt: skip
    elif run == "web worker killed":
        threads.append(threading.Thread(target=_kill_web_worker, kwargs={
            "server": web, "at": args.fault_at, "started": began, "log": stage.notes,
        }))  # fmt: skip
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(f"run {number + 1} ({run}) done", flush=True)


RUNS = ("steady", "graph stopped", "web worker killed")


def _scenario(args: argparse.Namespace, work: Path, graph: GraphServer) -> int:
    from django.conf import settings

    broker = re.sub(r"(/\d+)?$", "/7", settings.CELERY_BROKER_URL, count=1)
    os.environ["CELERY_BROKER_URL"] = os.environ["CELERY_RESULT_BACKEND"] = broker
    from vera.celery import app

    app.conf.broker_url = app.conf.result_backend = broker
    from tenants.domain.scopes import ScopeKind
    from tenants.selectors import principal_system
    from tenants.usecases import scope_create

    org = scope_create(kind=ScopeKind.ORGANISATION, name="Load Org")
    workspace = scope_create(kind=ScopeKind.WORKSPACE, name="Load WS", parent_id=org.pk)
    stage = Stage(
        args=args, work=work, graph=graph, group_id=workspace.group_id,
        principal=principal_system("bench", group_ids=[workspace.group_id]),
    )  # fmt: skip
    pending = _load(stage)
    people = _people(workspace.pk, args.clients)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    with contextlib.ExitStack() as stack:
        processes = _servers(stack, work, port)
        clients = [
            Client(base=base, key=key, username=username, queue=pending[n :: args.clients][::-1],
                   seed=n)
            for n, (username, key) in enumerate(people)
        ]  # fmt: skip
        for client in clients:
            client.sign_in()
        time.sleep(5)  # the workers load their models
        before = _memory(processes)
        for number, run in enumerate(RUNS):
            _run(stage, number, run, clients, base, processes["gunicorn"])
        after = _memory(processes)
        docs = args.per_run * len(RUNS)
        drain, drained = _drained(stage.principal, stage.sources, docs, cap_s=900)
        for client in clients:
            client.close()
    print(f"\nserver           gunicorn {WEB_WORKERS} workers x {WEB_THREADS} threads; celery "
          f"ingest, projection, interactive (1 process each) and beat; {args.clients} clients, "
          f"{args.seconds:.0f} s per run, each run ingesting {args.per_run} documents")  # fmt: skip
    server_errors = _report(stage.ledger, list(RUNS), args.seconds)
    for note in stage.notes:
        print(f"fault            {note}")
    print(drain)
    checks, broken = _check(stage.ledger, stage.principal)
    for line in checks:
        print(line)
    print("resident memory  MiB before the first run -> after the last")
    for name in sorted(set(before) | set(after)):
        print(f"  {name:<28}{before.get(name, 0):>8.0f} -> {after.get(name, 0):>6.0f}")
    return 1 if server_errors or broken or not drained else 0


if __name__ == "__main__":
    sys.exit(main())
