"""Indexing throughput: the MiniLM model alone, then outbox to searchable.

    env -u DATABASE_URL -u DATABASE_OWNER_URL -u REDIS_URL .venv/bin/python -m bench.index
        [--docs 300] [--threads 1,2] [--batches 1,8,32] [--sentences 256] [--abstracts 48]
        [--onnx LABEL=PATH ...] [--e2e-threads 1] [--job-by-job] [--skip-raw] [--skip-e2e]
        [--profile N]

RAW: texts/s and tokens/s of all-MiniLM-L6-v2 through the adapter
(`MiniLMEmbedder(intra_op_threads=..., batch_size=...)`, the pinned int8-weight ONNX
file) for each thread count x text kind x batch size. Sentences are the first 15 words
of SciFact abstracts; abstracts are "title\\n\\ntext" (../shared/eval/scifact). The
header gives each kind's whole token count and how many pass the model's 256-token
window; `read/text` is what the adapter reports it read (after its truncation or
windows), `pad%` the share of the fed batch tensors that was padding, `texts/cpu-s`
texts per CPU-second of this process (all threads): steadier than wall time when
others share the cores. `--onnx LABEL=PATH` adds another ONNX file of the same model
(an fp32 export, say), run the plain way (sort by characters, pad per batch, truncate
at 256, mean-pool; the adapter's session options), next to the pinned file run that
same way (`int8-file`); without it the table says that no fp32 file is installed.

END-TO-END: `--docs` abstracts go through the real pipeline as a tier-1 Markdown
source (connector, extraction, publication, outbox) into a fresh `vera_bench_index`
database; then the embedding cache is emptied of the claims' texts (in-process and
Redis), and only the index consumer's outbox processing is timed
(`process_outbox(consumer="index")` until nothing is left), then checked: every
indexed claim has its search document. The model alone then embeds those same texts
with the same thread count and batch size; the ratio is end-to-end over that.
`--job-by-job` runs the consumer without its batch handler (one write per job, as
before batching). SQL statements and their time are counted; `--profile N` also
prints the N functions with the most cumulative time. Asserts nothing about time:
on a shared machine only an idle run gives final figures.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import ROOT, bench_workspace, markdown_source, setup_django

CORPUS = ROOT.parent / "shared" / "eval" / "scifact" / "corpus.jsonl"
SENTENCE_WORDS = 15


def _abstracts(limit: int) -> list[tuple[str, str, str]]:
    """(id, title, text) of the first `limit` SciFact abstracts."""
    rows = []
    with CORPUS.open(encoding="utf-8") as handle:
        for line in handle:
            if len(rows) >= limit:
                break
            row = json.loads(line)
            rows.append((row["_id"], row["title"], row["text"]))
    return rows


@dataclass(frozen=True)
class TokenStats:
    mean: float  # tokens per text, whole (with [CLS] and [SEP])
    long: int  # texts longer than the model's 256-token window


def token_stats(texts: Sequence[str]) -> TokenStats:
    """Whole token counts (no truncation), whatever the adapter then does with them."""
    from tokenizers import Tokenizer

    from retrieval.adapters.embedders.minilm import MAX_TOKENS, TOKENIZER_FILE

    tokenizer = Tokenizer.from_file(str(TOKENIZER_FILE))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    full = [len(e.ids) for e in tokenizer.encode_batch([t.strip() for t in texts])]
    return TokenStats(mean=sum(full) / len(full), long=sum(n > MAX_TOKENS for n in full))


_cells: dict[int, int] = {}  # per session: batch tensor cells fed, padding included


def _counted(session: Any) -> Any:
    """`session` with its `run` counting the cells of each batch fed (once per session)."""
    if not getattr(session, "bench_counted", False):
        run = session.run

        def counting(names: Any, feed: dict[str, Any], *rest: Any, **options: Any) -> Any:
            _cells[id(session)] = _cells.get(id(session), 0) + int(feed["input_ids"].size)
            return run(names, feed, *rest, **options)

        session.run = counting
        session.bench_counted = True
    return session


def _session(embedder: Any) -> Any:
    """The ONNX session an embedder runs (the adapter's is private: None if it moved)."""
    if isinstance(embedder, SessionEmbedder):
        return embedder.session
    runtime = getattr(embedder, "_runtime", None)
    return getattr(runtime(), "session", None) if callable(runtime) else None


class SessionEmbedder:
    """Another ONNX file run exactly as the adapter runs its own (for fp32 and the like)."""

    def __init__(self, path: Path, *, intra_op_threads: int, batch_size: int) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        from retrieval.adapters.embedders.minilm import MAX_TOKENS, TOKENIZER_FILE

        self.batch_size = batch_size
        self.tokenizer = Tokenizer.from_file(str(TOKENIZER_FILE))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # noqa: S106
        options = onnxruntime.SessionOptions()
        options.inter_op_num_threads = 1
        options.intra_op_num_threads = intra_op_threads
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = onnxruntime.InferenceSession(
            str(path), options, providers=["CPUExecutionProvider"]
        )
        self.wants_types = "token_type_ids" in {i.name for i in self.session.get_inputs()}

    def embed_with_usage(self, texts: Sequence[str]) -> Any:
        import numpy as np

        from retrieval.adapters.embedders.base import EmbedResult
        from retrieval.adapters.embedders.minilm import mean_pool_normalised

        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vectors: list[list[float]] = [[] for _ in texts]
        tokens = calls = 0
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            encodings = self.tokenizer.encode_batch([texts[i].strip() for i in chunk])
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            feed = {"input_ids": ids, "attention_mask": mask}
            if self.wants_types:
                feed["token_type_ids"] = np.zeros_like(ids)
            (hidden,) = self.session.run(["last_hidden_state"], feed)
            for i, vector in zip(chunk, mean_pool_normalised(hidden, mask).tolist(), strict=True):
                vectors[i] = vector
            tokens += int(mask.sum())
            calls += 1
        return EmbedResult(vectors=vectors, tokens=tokens, calls=calls)


@dataclass(frozen=True)
class Pass:
    seconds: float
    cpu: float  # CPU seconds of this process, every thread: steadier on a shared machine
    tokens: int  # tokens the model read (the adapter's count)
    padding: float | None  # share of the fed cells that were padding; None if not seen


def _rate(embedder: Any, texts: Sequence[str]) -> Pass:
    """One timed pass over `texts`, after an untimed warm-up batch."""
    embedder.embed_with_usage(list(texts[: embedder.batch_size]))
    session = _session(embedder)
    if session is not None:
        _counted(session)
        _cells[id(session)] = 0
    started, cpu = time.perf_counter(), time.process_time()
    result = embedder.embed_with_usage(list(texts))
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    cells = _cells.get(id(session), 0) if session is not None else 0
    return Pass(seconds, cpu, result.tokens, 1 - result.tokens / cells if cells else None)


def _percent(share: float | None) -> str:
    return "n/a" if share is None else f"{100 * share:.1f}"


def raw_table(args: argparse.Namespace) -> None:
    from retrieval.adapters.embedders.minilm import MiniLMEmbedder, default_model_file

    rows = _abstracts(max(args.sentences, args.abstracts))
    kinds = {
        "sentence": [" ".join(text.split()[:SENTENCE_WORDS]) for _, _, text in rows][
            : args.sentences
        ],
        "abstract": [f"{title}\n\n{text}" for _, title, text in rows][: args.abstracts],
    }
    models: dict[str, Callable[[int, int], Any]] = {
        "adapter": lambda threads, batch: MiniLMEmbedder(intra_op_threads=threads, batch_size=batch)
    }
    extra = [item.split("=", 1) for item in args.onnx]
    if extra:  # the pinned file run the same plain way, to compare like with like
        extra.insert(0, ["int8-file", str(default_model_file())])
    for label, path in extra:
        models[label] = lambda threads, batch, path=path: SessionEmbedder(
            Path(path), intra_op_threads=threads, batch_size=batch
        )
    stats = {kind: token_stats(texts) for kind, texts in kinds.items()}
    print(f"RAW  all-MiniLM-L6-v2, {os.cpu_count()} cores seen; one pass after a warm-up batch")
    for kind, stat in stats.items():
        print(
            f"  {kind:<9} {len(kinds[kind]):>4} texts, {stat.mean:.1f} tokens each when whole, "
            f"{stat.long} longer than the 256-token window"
        )
    print(
        f"{'model':<12} {'thr':>3} {'kind':<9} {'batch':>5} {'read/text':>9} {'pad%':>5} "
        f"{'texts/s':>8} {'tokens/s':>8} {'texts/cpu-s':>11}"
    )
    for label, make in models.items():
        for threads in args.threads:
            for kind, texts in kinds.items():
                for batch in args.batches:
                    run = _rate(make(threads, batch), texts)
                    print(
                        f"{label:<12} {threads:>3} {kind:<9} {batch:>5} "
                        f"{run.tokens / len(texts):>9.1f} {_percent(run.padding):>5} "
                        f"{len(texts) / run.seconds:>8.1f} {run.tokens / run.seconds:>8.0f} "
                        f"{len(texts) / run.cpu:>11.1f}",
                        flush=True,
                    )
    if not args.onnx:
        print("fp32         no fp32 ONNX of all-MiniLM-L6-v2 is installed (pass --onnx fp32=PATH)")


@contextmanager
def _sql_counter() -> Iterator[dict[str, list[float]]]:
    """Per kind of statement (its first words): [count, wall seconds], default connection."""
    from django.db import connection

    totals: dict[str, list[float]] = {}

    def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            kind = " ".join(sql.split()[:4])[:60]
            entry = totals.setdefault(kind, [0, 0.0])
            entry[0] += 1
            entry[1] += time.perf_counter() - started

    with connection.execute_wrapper(wrapper):
        yield totals


def _backend_cpu() -> tuple[int, float] | None:
    """(pid, CPU seconds so far) of this connection's Postgres backend, if it runs here."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = int(cursor.fetchone()[0])
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return pid, (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _timed_model(inner: Any) -> dict[str, float]:
    """Wall and CPU seconds spent inside `inner.embed_with_usage` from now on."""
    spent = {"seconds": 0.0, "cpu": 0.0}
    embed = inner.embed_with_usage

    def timed(texts: Sequence[str]) -> Any:
        started, cpu = time.perf_counter(), time.process_time()
        try:
            return embed(texts)
        finally:
            spent["seconds"] += time.perf_counter() - started
            spent["cpu"] += time.process_time() - cpu

    inner.embed_with_usage = timed
    return spent


def _ingest(docs: int) -> str:
    """The abstracts as one tier-1 Markdown source, ingested; returns the group id."""
    from curation.usecases import ingest_now

    # Outside any git work tree, so the connector reads the folder by mtime.
    folder = Path(tempfile.gettempdir()) / "vera-bench-index"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir()
    for doc_id, title, text in _abstracts(docs):
        (folder / f"{doc_id}.md").write_text(f"# {title}\n\n{text}\n", encoding="utf-8")
    workspace, principal = bench_workspace("Index Org", "Index WS")
    source_id = markdown_source(principal, workspace.group_id, folder, name="scifact")
    report = ingest_now(source_id=source_id, group_id=workspace.group_id)
    if report.error or report.failed:
        raise SystemExit(f"ingestion failed: {report}")
    return workspace.group_id


def _forget(texts: list[str]) -> None:
    """Empty the embedding caches of `texts`: a new in-process cache, their Redis keys gone."""
    from vera import wiring

    wiring.embedder.cache_clear()
    cached = wiring.embedder()
    redis = cached._redis  # the bench empties exactly these keys
    keys = [cached.key(text) for text in texts]
    for start in range(0, len(keys), 500):
        redis.delete(*keys[start : start + 500])


def _configure(args: argparse.Namespace) -> None:
    """The wiring as the options ask: the model's thread count, the batch handler or not."""
    from retrieval.adapters import embedders
    from retrieval.adapters.embedders.minilm import MiniLMEmbedder
    from vera import wiring

    threads = args.e2e_threads
    if threads != 1:  # the wiring's adapter runs one thread; the bench may ask for more

        class Threaded(MiniLMEmbedder):
            def __init__(self, **kwargs: Any) -> None:
                super().__init__(**{"intra_op_threads": threads, **kwargs})

        embedders.MiniLMEmbedder = Threaded  # type: ignore[misc]
    if args.job_by_job:  # the consumer without its batch handler: one write per job
        wiring.CurationProviders.outbox_batch = lambda self, consumer: None  # type: ignore[method-assign]
    wiring.embedder.cache_clear()


@dataclass
class Run:
    """What the timed outbox processing did."""

    seconds: float = 0.0
    cpu: float = 0.0
    postgres: float | None = None  # CPU seconds of the Postgres backend, when visible
    model: dict[str, float] | None = None  # wall and CPU seconds inside the model
    sql: dict[str, list[float]] | None = None
    embedded: int = 0  # texts the model embedded (cache misses)


def _process(inner: Any, cached: Any, profiler: cProfile.Profile | None) -> Run:
    """Drain the index consumer's outbox, timed."""
    from curation.tasks import process_outbox

    before = cached.meter.usage(cached.model)
    run = Run(model=_timed_model(inner))
    backend = _backend_cpu()
    with _sql_counter() as sql:
        if profiler is not None:
            profiler.enable()
        started, cpu = time.perf_counter(), time.process_time()
        while process_outbox(consumer="index"):
            pass
        run.seconds, run.cpu = time.perf_counter() - started, time.process_time() - cpu
        if profiler is not None:
            profiler.disable()
    after = _backend_cpu()
    if backend and after and backend[0] == after[0]:
        run.postgres = after[1] - backend[1]
    run.sql, run.embedded = sql, cached.meter.usage(cached.model).texts - before.texts
    return run


def _report(run: Run, raw: Pass, texts: list[str], *, threads: int, batch: int) -> None:
    stats = token_stats(texts)
    model, sql = run.model or {}, run.sql or {}
    raw_rate, e2e_rate = len(texts) / raw.seconds, len(texts) / run.seconds
    sql_s = sum(seconds for _, seconds in sql.values())
    print(
        f"claims' texts    {stats.mean:.1f} tokens each when whole, {stats.long} longer than "
        f"256; the model read {raw.tokens / len(texts):.1f} each, "
        f"{_percent(raw.padding)}% padding at batch {batch}"
    )
    print(f"{'measure':<36} {'wall-s':>7} {'claims/s':>8} {'cpu-s':>6}")
    rows = [
        ("outbox -> searchable (index lane)", f"{run.seconds:.1f}", f"{e2e_rate:.1f}",
         f"{run.cpu:.1f}"),
        ("  of which inside the model", f"{model['seconds']:.1f}", "", f"{model['cpu']:.1f}"),
        ("  of which SQL (client wall)", f"{sql_s:.1f}", "", ""),
        ("  Postgres backend CPU", "", "", "n/a" if run.postgres is None
         else f"{run.postgres:.1f}"),
        ("model alone on the same texts", f"{raw.seconds:.1f}", f"{raw_rate:.1f}",
         f"{raw.cpu:.1f}"),
    ]  # fmt: skip
    for label, wall, rate, cpu in rows:
        print(f"{label:<36} {wall:>7} {rate:>8} {cpu:>6}")
    print(
        f"end-to-end / raw: {e2e_rate / raw_rate:.2f} by wall clock (the two phases ran at "
        f"different times); {model['seconds'] / run.seconds:.2f} the model's share of the "
        f"run's wall time; {raw.cpu / (run.cpu + (run.postgres or 0.0)):.2f} by CPU (model "
        f"alone / the run's, Postgres' included)"
    )
    print(
        f"({threads} intra-op thread(s), batch {batch}; {run.embedded} texts embedded by the "
        f"model during the run; {sum(int(c) for c, _ in sql.values())} SQL statements)"
    )


def end_to_end(args: argparse.Namespace) -> None:
    from curation.models import Claim, OutboxJob
    from retrieval.adapters.embedders.minilm import MiniLMEmbedder
    from retrieval.models import SearchDocument
    from retrieval.services.index import document_text
    from retrieval.usecases import INDEXED_STATUSES
    from tenants import rls
    from tenants.selectors import principal_system
    from vera import wiring

    _configure(args)
    started = time.perf_counter()
    group_id = _ingest(args.docs)
    principal = principal_system("bench", group_ids=[group_id])
    with rls.tenant_context(principal):
        claims = list(
            Claim.objects.filter(status__in=INDEXED_STATUSES)
            .select_related("subject")
            .prefetch_related("evidence")
        )
        texts = [document_text(claim) for claim in claims]
        jobs = OutboxJob.objects.filter(consumer="index", status="pending").count()
    print(
        f"\nEND-TO-END  {args.docs} abstracts -> {len(claims)} indexable claims, {jobs} index "
        f"jobs (ingestion {time.perf_counter() - started:.0f} s, not timed)"
    )
    _forget(texts)
    cached = wiring.embedder()
    if cached.meter is None:
        raise SystemExit("the wired embedder has no meter: cannot tell what the model embedded")
    inner = cached.inner
    inner.warm_up()  # the model loads once per process: not indexing work
    profiler = cProfile.Profile() if args.profile else None
    run = _process(inner, cached, profiler)
    with rls.tenant_context(principal):
        indexed = SearchDocument.objects.filter(claim__in=[c.pk for c in claims]).count()
        left = OutboxJob.objects.filter(consumer="index").exclude(status="done").count()
    if indexed != len(claims) or left:
        raise SystemExit(f"{indexed} of {len(claims)} claims indexed, {left} index jobs left")
    threads, batch = args.e2e_threads, inner.batch_size
    raw = _rate(MiniLMEmbedder(intra_op_threads=threads, batch_size=batch), texts)
    _report(run, raw, texts, threads=threads, batch=batch)
    if profiler is not None:
        print(f"\n{'statement':<60} {'count':>6} {'wall-s':>7}")
        for kind, (count, seconds) in sorted((run.sql or {}).items(), key=lambda i: -i[1][1])[:12]:
            print(f"{kind:<60} {int(count):>6} {seconds:>7.2f}")
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(args.profile)
        print(out.getvalue())


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ints = lambda value: [int(v) for v in value.split(",")]  # noqa: E731
    parser.add_argument("--docs", type=int, default=300, help="abstracts ingested end-to-end")
    parser.add_argument("--threads", type=ints, default=[1, 2], help="raw: intra-op threads")
    parser.add_argument("--batches", type=ints, default=[1, 8, 32], help="raw: batch sizes")
    parser.add_argument("--sentences", type=int, default=256, help="raw: sentences per pass")
    parser.add_argument("--abstracts", type=int, default=48, help="raw: abstracts per pass")
    parser.add_argument(
        "--onnx", action="append", default=[], metavar="LABEL=PATH",
        help="raw: also time this ONNX file of the same model (e.g. fp32=/tmp/minilm.onnx)",
    )  # fmt: skip
    parser.add_argument("--e2e-threads", type=int, default=1, help="end-to-end intra-op threads")
    parser.add_argument(
        "--job-by-job", action="store_true", help="end-to-end: no batch handler (one write per job)"
    )
    parser.add_argument("--skip-raw", action="store_true")
    parser.add_argument("--skip-e2e", action="store_true")
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="end-to-end: cProfile")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    if not args.skip_raw:
        raw_table(args)
    if not args.skip_e2e:
        os.environ["VERA_EMBEDDER__PROVIDER"] = "minilm"
        os.environ.setdefault("VERA_BENCH__DB", "vera_bench_index")
        setup_django()
        end_to_end(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
