"""Per-search cost of query understanding with 1,000,000 entities across tenants.

    .venv/bin/python -m bench.understanding_cost [--entities 1000000] [--tenants 1000]
        [--questions 200] [--reuse]

A small workspace holds a generated estate's CMDB export (200 services, bench/estate.py)
ingested through the real connector and indexed by draining the outbox, in its own
database (`vera_bench_understanding`). About 200 questions ("where does X run", "who
owns X", "what runs on H", "who does Dubois report to", a long sentence naming nothing)
are searched by a system principal of that workspace through `pipeline.search` (no
embedder, nothing recorded); the pipeline's own step timings `understand` (the
understanding's Python and SQL) and `understood` (the understood stage-1 list) are
printed at p50/p95: (a) with only the small workspace, then (b) after `--entities`
entities, each with one alias, are bulk-inserted as the owner role across `--tenants`
other workspaces (`w:bench000123`), their names colliding with the small workspace's
(every tenth alias is one of its service names; others `dubois 123`, `team 42`,
`person 123456`). Last, EXPLAIN (ANALYZE, BUFFERS) of the alias lookup, the name-part
(trigram) lookup and the understood list, run as the app role under the workspace's
row-level security, and whether each used an index. The requirement checked by eye:
`understand` at most 5 ms p50 at 1M entities, not growing with other tenants' data.
It asserts nothing. `--reuse` keeps a loaded database (then (a) is not measured).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

from bench.common import _with_db, db_name, drain_outbox, setup_django
from bench.estate import Estate
from bench.search_latency import nearest_rank

WORKSPACE = "Understanding cost"
SERVICES = 200
GROUPS = "vera.group_ids"  # tenants.rls.GROUPS_SETTING (imported only after set-up)
SEED = 7


def _small_tenant() -> tuple[str, Estate]:
    """The small workspace (made and ingested unless it exists): its group id, its estate."""
    from curation.usecases import ingest_now, source_create
    from tenants import rls
    from tenants.domain.scopes import ScopeKind
    from tenants.models import Scope
    from tenants.selectors import principal_system
    from tenants.usecases import scope_create

    estate = Estate.generate(services=SERVICES, seed=SEED)
    found = Scope.objects.filter(name=WORKSPACE, kind=ScopeKind.WORKSPACE).first()
    if found is not None:
        return found.group_id, estate
    org = scope_create(kind=ScopeKind.ORGANISATION, name=f"{WORKSPACE} Org")
    workspace = scope_create(kind=ScopeKind.WORKSPACE, name=WORKSPACE, parent_id=org.pk)
    folder = Path(tempfile.gettempdir()) / "vera-bench-understanding"
    cmdb, _ = estate.write(folder)
    principal = principal_system("bench", group_ids=[workspace.group_id])
    with rls.tenant_context(principal):
        source = source_create(
            actor=principal, group_id=workspace.group_id, name="cmdb", kind="cmdb",
            config={"path": str(cmdb)}, trust_tier=1,
        )  # fmt: skip
    started = time.perf_counter()
    report = ingest_now(source_id=source.pk, group_id=workspace.group_id)
    drain_outbox()
    print(
        f"small tenant {workspace.group_id}: {report.new} records, claims "
        f"{dict(report.claims)}, ingested and indexed in {time.perf_counter() - started:.1f} s"
    )
    return workspace.group_id, estate


def questions(estate: Estate, count: int) -> list[str]:
    rng = random.Random(SEED)  # noqa: S311 - reproducible test data
    services = list(estate.services)
    forms = [
        lambda: f"where does {rng.choice(services).name} run",
        lambda: f"who owns {rng.choice(services).name}",
        lambda: f"what runs on {rng.choice(services).host}",
        lambda: "who does Dubois report to",
        lambda: (
            "the deployment pipeline was slow yesterday afternoon and several teams noticed "
            "that the nightly batch jobs finished much later than they usually do"
        ),
    ]
    return [forms[i % len(forms)]() for i in range(count)]


def _owner_url() -> str:
    return _with_db(os.environ["DATABASE_OWNER_URL"], db_name())


def counts() -> tuple[int, int, int]:
    """Entities and aliases in the whole database (the planner's count after ANALYZE: every
    role is under row-level security here) and the entities of the small workspace."""
    import psycopg

    from tenants.models import Scope

    group_id = Scope.objects.get(name=WORKSPACE).group_id
    with psycopg.connect(_owner_url(), autocommit=True) as conn:
        conn.execute("ANALYZE curation_entity")
        conn.execute("ANALYZE curation_entityalias")
        row = conn.execute(
            "SELECT (SELECT reltuples::bigint FROM pg_class WHERE relname = 'curation_entity'),"
            " (SELECT reltuples::bigint FROM pg_class WHERE relname = 'curation_entityalias')"
        ).fetchone()
        conn.execute("BEGIN")
        conn.execute("SELECT set_config(%s, %s, true)", [GROUPS, group_id])
        own = conn.execute("SELECT count(*) FROM curation_entity").fetchone()
        conn.execute("COMMIT")
    if row is None or own is None:
        raise RuntimeError("no counts")
    return max(row[0], 0), max(row[1], 0), own[0]


def load_others(estate: Estate, *, entities: int, tenants: int) -> float:
    """Bulk-insert `entities` entities with one alias each across `tenants` groups (owner
    role, raw SQL, one group at a time: row-level security is forced on the owner too);
    the seconds it took, ANALYZE included."""
    import psycopg

    from curation.domain.names import normalize_name

    names = [service.name for service in estate.services]
    if any(normalize_name(name) != name.lower() for name in names):
        raise RuntimeError("service names are not their own normal form")
    started = time.perf_counter()
    with psycopg.connect(_owner_url()) as conn:
        conn.execute("SET synchronous_commit = off")
        for tenant in range(tenants):
            group_id = f"w:bench{tenant:06d}"
            conn.execute("SELECT set_config(%s, %s, true)", [GROUPS, group_id])
            # Names repeat within a group (`team 42`): one alias per group and name (the
            # unique constraint), every entity still inserted.
            conn.execute(
                """
                WITH named AS (
                    SELECT i, CASE
                        WHEN i %% 10 = 0 THEN (%(names)s::text[])[1 + (i / 10) %% %(count)s]
                        WHEN i %% 10 IN (1, 2) THEN 'Dubois ' || i
                        WHEN i %% 10 = 3 THEN 'Team ' || (i %% 1000)
                        ELSE 'Person ' || i END AS name
                    FROM generate_series(%(first)s, %(n)s, %(step)s) AS i
                ), made AS (
                    INSERT INTO curation_entity
                        (group_id, canonical_name, entity_type, created_at)
                    SELECT %(group)s, name, 'thing', now() FROM named ORDER BY i
                    RETURNING id, canonical_name
                )
                INSERT INTO curation_entityalias
                    (group_id, entity_id, alias, alias_norm, embedding_model, method, created_at)
                SELECT DISTINCT ON (lower(canonical_name))
                    %(group)s, id, canonical_name, lower(canonical_name), '', 'new', now()
                FROM made
                ORDER BY lower(canonical_name), id
                """,
                {"names": names, "count": len(names), "first": tenant + 1, "n": entities,
                 "step": tenants, "group": group_id},
            )  # fmt: skip
            conn.commit()
    with psycopg.connect(_owner_url(), autocommit=True) as conn:
        conn.execute("ANALYZE curation_entity")
        conn.execute("ANALYZE curation_entityalias")
    return time.perf_counter() - started


def measure(group_id: str, texts: list[str], label: str) -> None:
    from django.utils import timezone

    from retrieval.domain.query import Query
    from retrieval.services.search import pipeline
    from tenants import rls
    from tenants.selectors import principal_system

    principal = principal_system("bench", group_ids=[group_id])
    steps: dict[str, list[float]] = {"understand": [], "understood": []}
    named = 0
    by_form: dict[str, list[float]] = {}
    with rls.tenant_context(principal):
        for text in texts[:20]:  # warm up: connections, caches, the ontology
            pipeline.search(query=Query(text=text, k=10), embedder=None, now=timezone.now(),
                            record=False)  # fmt: skip
        for text in texts:
            result = pipeline.search(
                query=Query(text=text, k=10), embedder=None, now=timezone.now(), record=False
            )
            for step, values in steps.items():
                if step in result.timings:
                    values.append(result.timings[step])
            form = " ".join(text.split()[:3])
            by_form.setdefault(form if text.startswith("who does") else form.split()[0], [])
            by_form[form if text.startswith("who does") else form.split()[0]].append(
                result.timings["understand"]
            )
            named += bool(result.understood.entities)
    print(f"{label}: {len(texts)} questions, {named} named an entity of the workspace")
    for step, values in steps.items():
        if values:
            print(
                f"  {step:<11} n={len(values):>4}  p50 {nearest_rank(values, 50):6.2f} ms  "
                f"p95 {nearest_rank(values, 95):6.2f} ms  mean {statistics.fmean(values):6.2f} ms"
            )
    for form, values in by_form.items():
        print(
            f"  understand, questions starting {form!r:<16} n={len(values):>3}  "
            f"p50 {nearest_rank(values, 50):6.2f} ms  p95 {nearest_rank(values, 95):6.2f} ms"
        )


def explain(group_id: str, estate: Estate) -> None:
    """EXPLAIN (ANALYZE, BUFFERS) of the understanding's lookups, as the app role under RLS."""
    from django.db import connection

    from retrieval.domain.query import Query
    from retrieval.services.search import sql
    from tenants import rls
    from tenants.selectors import principal_system

    service = estate.services[0].name
    where, params = sql.where_clause(Query(text="x"))
    about, values = sql.understood_about([service], ())
    plans = {
        "alias lookup (alias_norm IN)": (
            "SELECT a.id, e.id FROM curation_entityalias a JOIN curation_entity e "
            "ON e.id = a.entity_id WHERE a.alias_norm IN (%s, %s, %s, %s)",
            [service, "where does", "run", f"where does {service}"],
        ),
        "name part (trigram LIKE)": (
            "SELECT a.id, e.id FROM curation_entityalias a JOIN curation_entity e "
            "ON e.id = a.entity_id WHERE (a.alias_norm LIKE %s OR a.alias_norm LIKE %s "
            "OR a.alias_norm LIKE %s) LIMIT 24",
            ["dubois %", "% dubois", "% dubois %"],
        ),
        "understood list": (
            f"SELECT d.claim_id FROM retrieval_searchdocument d WHERE {about} AND {where} "  # noqa: S608
            "ORDER BY d.authority DESC, d.valid_from DESC, d.claim_id LIMIT %s",
            [*values, *params, 100],
        ),
    }
    with rls.tenant_context(principal_system("bench", group_ids=[group_id])):
        for label, (statement, args) in plans.items():
            with connection.cursor() as cursor:
                cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS) {statement}", args)
                lines = [row[0] for row in cursor.fetchall()]
            plan = "\n".join(lines)
            indexed = "Index" in plan or "Bitmap Index" in plan
            print(f"\nEXPLAIN {label}: index used: {'yes' if indexed else 'NO'}")
            print("\n".join(f"    {line}" for line in lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entities", type=int, default=1_000_000)
    parser.add_argument("--tenants", type=int, default=1000)
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--reuse", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("VERA_BENCH__DB", "vera_bench_understanding")
    os.environ.setdefault("VERA_MEMORY__GRAPH_NAME", "vera_bench_understanding")
    setup_django(fresh=not args.reuse)

    group_id, estate = _small_tenant()
    texts = questions(estate, args.questions)
    entities, aliases, own = counts()
    loaded = entities >= args.entities
    if not loaded:
        print(f"\n(a) before: {entities} entities, {aliases} aliases; {own} in the workspace")
        measure(group_id, texts, "(a) small tenant only")
        explain(group_id, estate)
        seconds = load_others(estate, entities=args.entities, tenants=args.tenants)
        print(f"\nloaded {args.entities} entities across {args.tenants} groups in {seconds:.1f} s")
    entities, aliases, own = counts()
    print(f"\n(b) after: {entities} entities, {aliases} aliases; {own} in the workspace")
    measure(group_id, texts, "(b) with the other tenants")
    explain(group_id, estate)
    print("\nrequirement: understand p50 <= 5 ms at 1M entities, not growing with other tenants")


if __name__ == "__main__":
    main()
