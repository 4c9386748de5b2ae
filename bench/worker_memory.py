"""Worker memory: resident memory of each Celery worker process before and after indexing.

    env -u DATABASE_URL -u DATABASE_OWNER_URL -u REDIS_URL .venv/bin/python -m bench.worker_memory
        [--docs 1200] [--concurrency 2] [--idle 30] [--embedder minilm|e5|hashing]

`--docs` SciFact abstracts are ingested in this process as a tier-1 Markdown source
into a fresh `vera_bench_worker_memory` database, which queues an index job per claim. Then one
projection-lane worker starts as compose starts it (`celery worker -Q projection`,
prefork, `--concurrency 2`, the settings and environment production reads, the
embedder warmed after fork) and drains those jobs through `curation.process_outbox`
tasks, `--concurrency` at a time. Its broker and embedding cache are Redis databases of
their own, emptied first, so every claim is embedded by the worker, not found cached.

Prints each worker process's resident memory (VmRSS) when ready, after indexing and
after `--idle` seconds idle, and its peak (VmHWM); a pool process replaced meanwhile
(VERA_WORKER__MAX_MEMORY_MB) shows as a new pid. Set MALLOC_ARENA_MAX or
VERA_WORKER__MAX_MEMORY_MB in the environment to compare. Asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from pathlib import Path

from bench.common import bench_workspace, child_process, markdown_source, setup_django
from bench.ingest import write_corpus

BROKER_DB = 10  # apart from the test suite's and bench.lanes' (7) Redis databases
CACHE_DB = 11


def _status(pid: int) -> dict[str, str]:
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:  # the process has exited
        return {}
    return {key: value.strip() for key, _, value in (line.partition(":") for line in lines)}


def _kib(status: dict[str, str], field: str) -> int:
    return int(status.get(field, "0 kB").split()[0])


def _children(pid: int) -> list[int]:
    """The pool processes: the worker's direct children (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and _status(int(entry.name)).get("PPid") == str(pid):
            found.append(int(entry.name))
    return sorted(found)


def _sample(main: int) -> dict[int, tuple[int, int]]:
    """(VmRSS, VmHWM) in KiB of the worker's main process and each pool process."""
    sample = {}
    for pid in (main, *_children(main)):
        status = _status(pid)
        if status:
            sample[pid] = (_kib(status, "VmRSS"), _kib(status, "VmHWM"))
    return sample


def _print_table(main: int, samples: dict[str, dict[int, tuple[int, int]]]) -> None:
    pids = sorted({pid for sample in samples.values() for pid in sample}, key=lambda p: p != main)
    names = list(samples)
    print(f"{'process':<16}" + "".join(f"{name + ' MiB':>16}" for name in names)
          + f"{'peak MiB':>12}")  # fmt: skip
    for pid in pids:
        role = "main" if pid == main else "pool"
        cells = [samples[name].get(pid) for name in names]
        peak = max((cell[1] for cell in cells if cell), default=0)
        print(f"{role} {pid:<11}"
              + "".join(f"{cell[0] / 1024:16.0f}" if cell else f"{'-':>16}" for cell in cells)
              + f"{peak / 1024:12.0f}")  # fmt: skip
    for name in names:
        total = sum(rss for rss, _ in samples[name].values())
        print(f"total {name:<10} {total / 1024:.0f} MiB over {len(samples[name])} processes")


def _wait_ready(log: Path, pid: int, concurrency: int, timeout_s: float = 300) -> None:
    """Until the worker logged `ready` and each pool process has warmed its embedder."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if "ready." in log.read_text(errors="replace") and len(_children(pid)) >= concurrency:
            # The warm-up runs in worker_process_init, before a pool process takes work;
            # a pool process is idle (sleeping, low CPU) once it is done.
            time.sleep(5)
            return
        time.sleep(0.5)
    raise SystemExit(f"the worker did not become ready; see {log}")


def _isolated_redis() -> None:
    """Point the broker and the embedding cache at Redis databases of their own, emptied."""
    import redis

    base = os.environ["REDIS_URL"]
    for name, db in (("CELERY_BROKER_URL", BROKER_DB), ("CELERY_RESULT_BACKEND", BROKER_DB),
                     ("VERA_CACHE__URL", CACHE_DB)):  # fmt: skip
        os.environ[name] = re.sub(r"(/\d+)?$", f"/{db}", base, count=1)
    for db in (BROKER_DB, CACHE_DB):
        redis.Redis.from_url(re.sub(r"(/\d+)?$", f"/{db}", base, count=1)).flushdb()


def _ingest(docs: int) -> tuple[str, int]:
    """Ingest `docs` abstracts in this process; returns the group id and its claims."""
    from curation.models import Claim
    from curation.usecases import ingest_now
    from tenants import rls

    corpus = Path(tempfile.gettempdir()) / "vera-bench-worker-memory" / "docs"
    write_corpus(corpus, docs=docs, scifact_only=True)
    workspace, principal = bench_workspace("Load Org", "Load WS")
    source_id = markdown_source(principal, workspace.group_id, corpus, name="scifact")
    ingest_now(source_id=source_id, group_id=workspace.group_id)
    with rls.tenant_context(principal):
        return workspace.group_id, Claim.objects.count()


def _pending_index_jobs(group_id: str) -> int:
    from curation.domain.outbox import Consumer
    from curation.models import OutboxJob
    from tenants import rls
    from tenants.selectors import principal_system

    with rls.tenant_context(principal_system("bench", group_ids=[group_id])):
        return OutboxJob.objects.filter(consumer=Consumer.INDEX, status="pending").count()


def _drain(group_id: str, concurrency: int) -> float:
    """Send process_outbox(consumer=index) tasks, `concurrency` at a time, until none is left."""
    from curation.tasks import process_outbox

    started = time.monotonic()
    while (pending := _pending_index_jobs(group_id)) > 0:
        print(f"  {pending} index jobs pending", flush=True)
        runs = [process_outbox.delay(consumer="index") for _ in range(concurrency)]
        if not sum(sum(run.get(timeout=1800).values()) for run in runs):
            print("  no job was due (retries wait for later): stopping", flush=True)
            break
    return time.monotonic() - started


def _worker_env() -> dict[str, str]:
    """The environment a worker gets: the app role's database URL, no owner URL."""
    import dj_database_url
    from django.db import connections

    app = dj_database_url.parse(os.environ["DATABASE_URL"])
    name = connections["default"].settings_dict["NAME"]
    env = {**os.environ, "DATABASE_URL": f"postgres://{app['USER']}:{app['PASSWORD']}"
           f"@{app['HOST']}:{app['PORT']}/{name}"}  # fmt: skip
    env.pop("DATABASE_OWNER_URL", None)
    return env


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", type=int, default=1200)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--idle", type=float, default=30.0, help="seconds idle after indexing")
    parser.add_argument("--embedder", default="minilm", choices=["minilm", "e5", "hashing"])
    args = parser.parse_args()
    os.environ["VERA_BENCH__DB"] = os.environ.get("VERA_BENCH__DB", "vera_bench_worker_memory")
    os.environ["VERA_EMBEDDER__PROVIDER"] = args.embedder
    os.environ["VERA_BACKPRESSURE__INGEST"] = "off"
    os.environ.setdefault("VERA_SOURCES__FILE_ROOTS", tempfile.gettempdir())
    setup_django()
    _isolated_redis()
    from django.conf import settings

    from vera.celery import app

    app.conf.broker_url = app.conf.result_backend = os.environ["CELERY_BROKER_URL"]
    started = time.monotonic()
    group_id, claims = _ingest(args.docs)
    print(f"ingested {args.docs} documents, {claims} claims in {time.monotonic() - started:.0f} s")
    # Ingestion may have embedded entity names: empty the cache so the worker embeds all.
    _isolated_redis()
    log = Path(tempfile.gettempdir()) / "vera-bench-worker-memory" / "worker.log"
    command = [sys.executable, "-m", "celery", "-A", "vera", "worker", "-l", "info",
               "-Q", "projection", "-n", "bench-memory@%h", "--concurrency",
               str(args.concurrency), "--without-gossip", "--without-mingle"]  # fmt: skip
    samples: dict[str, dict[int, tuple[int, int]]] = {}
    with child_process(command, _worker_env(), log) as worker:
        pid = worker.pid
        _wait_ready(log, pid, args.concurrency)
        samples["ready"] = _sample(pid)
        elapsed = _drain(group_id, args.concurrency)
        samples["indexed"] = _sample(pid)
        time.sleep(args.idle)
        samples[f"idle {args.idle:.0f}s"] = _sample(pid)
    print(f"embedder {args.embedder}; {claims} claims indexed in {elapsed:.0f} s; "
          f"MALLOC_ARENA_MAX={os.environ.get('MALLOC_ARENA_MAX', 'unset')}, "
          f"worker_max_memory_per_child="
          f"{getattr(settings, 'CELERY_WORKER_MAX_MEMORY_PER_CHILD', None)} KiB")  # fmt: skip
    _print_table(pid, samples)
    return 0


if __name__ == "__main__":
    sys.exit(main())
