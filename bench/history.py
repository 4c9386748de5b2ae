"""A history export through the CMDB connector: as-of accuracy and stale citations.

    env -u DATABASE_URL -u DATABASE_OWNER_URL -u REDIS_URL \\
        .venv/bin/python -m bench.history [--items 400] [--seed 7]

Into its own database (`vera_bench_history`, hashing embedder), through the real
connector and pipeline: a generated CSV export of `--items` services, each with one to
four periods (one row per item and period, the same `id`, a `since` instant; rows
shuffled). Each period may move the service to another host (RUNS_ON, functional),
change its owner (OWNED_BY) or its DEPENDS_ON list (which shrinks and grows). A tenth
of the items also carry a row that repeats an id and an instant: it must fail alone.

Then, with the outbox drained (index and graph):

- the record: for every item, period and predicate, the claims valid at an instant in
  the period (`claims_valid`, what REST and MCP read) must be that period's values, and
  now the last period's;
- search over HTTP (gunicorn, a viewer's API key): "where does svc-N run" as of an
  instant in each period (the `as_of` parameter; and the date written in the question
  instead: "where did svc-N run on 4 March 2019", "... on 2019-03-04", "... as of March
  4, 2019") must put that period's host first among RUNS_ON hits, and now the last;
  every claim a "now" answer cites must be published (stale otherwise).

Prints the counts; asserts nothing. Exact means: record errors 0, as-of hits all,
stale citations 0, failed rows = the repeated ones.
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import os
import random
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench.common import bench_workspace, drain_outbox, setup_django, workspace_viewer_key
from bench.search_latency import http_server, nearest_rank

START = dt.datetime(2016, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True)
class Period:
    """One version of a service: from when, its host, owner and dependencies."""

    since: dt.datetime
    host: str
    owner: str
    depends: frozenset[str]


def _timelines(items: int, rng: random.Random) -> dict[str, list[Period]]:
    """Each service's periods in valid-time order (one to four, days apart at random)."""
    out: dict[str, list[Period]] = {}
    for n in range(items):
        since = START + dt.timedelta(days=rng.randrange(0, 400))
        owner = f"team-{rng.randrange(40):02d}"
        depends = set(rng.sample([f"db-{k:02d}" for k in range(30)], rng.randrange(0, 4)))
        periods = []
        for version in range(rng.choice([1, 2, 2, 3, 3, 4])):
            if version:
                since += dt.timedelta(days=rng.randrange(60, 500))
                if rng.random() < 0.4:
                    owner = f"team-{rng.randrange(40):02d}"
                if depends and rng.random() < 0.5:
                    depends.discard(sorted(depends)[0])  # the list shrinks
                if rng.random() < 0.3:
                    depends.add(f"db-{rng.randrange(30):02d}")  # and grows
            host = f"k8s-{n:03d}-{version}"
            periods.append(Period(since, host, owner, frozenset(depends)))
        out[f"svc-{n:03d}"] = periods
    return out


def _write(path: Path, timelines: dict[str, list[Period]], rng: random.Random) -> int:
    """The export, rows shuffled; returns how many rows repeat an id and an instant."""
    rows = []
    for name, periods in timelines.items():
        for period in periods:
            rows.append([f"ID-{name}", name, period.host, period.owner,
                         ";".join(sorted(period.depends)), f"{period.since:%Y-%m-%d}"])  # fmt: skip
    rng.shuffle(rows)
    repeated = []
    for name in list(timelines)[:: max(1, len(timelines) // (len(timelines) // 10 or 1))]:
        first = timelines[name][0]
        repeated.append([f"ID-{name}", name, "k8s-wrong", "team-wrong", "",
                         f"{first.since:%Y-%m-%d}"])  # fmt: skip
    lines = ["id,name,host,owner,depends_on,since"]
    lines += [",".join(f'"{cell}"' for cell in row) for row in rows + repeated]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(repeated)


def _probes(timelines: dict[str, list[Period]]) -> Iterator[tuple[str, Period, dt.datetime]]:
    """(service, period, an instant inside the period) for every period."""
    for name, periods in timelines.items():
        for i, period in enumerate(periods):
            end = periods[i + 1].since if i + 1 < len(periods) else period.since + dt.timedelta(90)
            yield name, period, period.since + (end - period.since) / 2


def _record_errors(timelines: dict[str, list[Period]], principal: object) -> tuple[int, int]:
    """(checks, wrong): the record's values per item, period and predicate, and now."""
    from curation.selectors import claims_valid
    from tenants import rls

    checks = wrong = 0

    def values(name: str, predicate: str, as_of: dt.datetime | None) -> frozenset[str]:
        return frozenset(
            claims_valid(as_of=as_of)
            .filter(subject__canonical_name=name, predicate=predicate)
            .values_list("object_entity__canonical_name", flat=True)
        )

    with rls.tenant_context(principal):  # type: ignore[arg-type]
        for name, period, instant in _probes(timelines):
            last = timelines[name][-1] is period
            for as_of in (instant, None) if last else (instant,):
                for predicate, want in (
                    ("RUNS_ON", frozenset({period.host})),
                    ("OWNED_BY", frozenset({period.owner})),
                    ("DEPENDS_ON", period.depends),
                ):
                    checks += 1
                    wrong += values(name, predicate, as_of) != want
    return checks, wrong


def _first_host(
    client: httpx.Client, name: str, as_of: dt.datetime | None, *, stated: bool = False
) -> tuple[str, list]:
    """The object of the first RUNS_ON hit of "where does <name> run" (as of `as_of`:
    the parameter, or with `stated` the date written in the question), and the hits."""
    params = {"q": f"where does {name} run"}
    if stated and as_of is not None:
        # The date as people write it, in turn: "4 March 2019", "2019-03-04", "March 4, 2019".
        said = (f"on {as_of.day} {as_of:%B %Y}", f"on {as_of:%Y-%m-%d}",
                f"as of {as_of:%B} {as_of.day}, {as_of:%Y}")[as_of.toordinal() % 3]  # fmt: skip
        params = {"q": f"where did {name} run {said}"}
    elif as_of is not None:
        params["as_of"] = as_of.isoformat()
    response = client.get("/api/v1/search", params=params)
    response.raise_for_status()
    hits = response.json()["hits"]
    first = next((hit for hit in hits if hit["predicate"] == "RUNS_ON"), None)
    return (first["object"] if first else ""), hits


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=400)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    os.environ.setdefault("VERA_BENCH__DB", "vera_bench_history")
    os.environ.setdefault("VERA_MEMORY__GRAPH_NAME", "vera_bench_history")
    os.environ.setdefault("VERA_EMBEDDER__PROVIDER", "hashing")
    setup_django(fresh=True)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    from curation.models import Claim
    from curation.usecases import ingest_now, source_create
    from tenants import rls

    rng = random.Random(args.seed)  # noqa: S311 - generated data, not a secret
    timelines = _timelines(args.items, rng)
    export = Path(tempfile.mkdtemp(prefix="vera-bench-history-")) / "services.csv"
    repeated = _write(export, timelines, rng)
    rows = sum(len(periods) for periods in timelines.values())
    workspace, principal = bench_workspace("History Org", "History WS")
    with rls.tenant_context(principal):
        source = source_create(
            actor=principal, group_id=workspace.group_id, name="service history", kind="cmdb",
            config={"path": str(export), "valid_from_field": "since"}, trust_tier=1,
        )  # fmt: skip
    started = time.perf_counter()
    report = ingest_now(source_id=source.pk, group_id=workspace.group_id)
    loaded_s = time.perf_counter() - started
    drain_outbox()
    print(
        f"export            {args.items} items, {rows} periods "
        f"({sum(len(p) > 2 for p in timelines.values())} items with 3+), "
        f"{repeated} rows repeating an id and instant"
    )
    print(
        f"ingest            {report.new} new, {report.failed} failed, {report.unchanged} "
        f"unchanged in {loaded_s:.1f} s; error {report.error!r}"
    )
    checks, wrong = _record_errors(timelines, principal)
    print(f"record            {checks} (item, period, predicate) checks, {wrong} wrong")
    with rls.tenant_context(principal):
        status = dict(Claim.objects.values_list("pk", "status"))

    key = workspace_viewer_key(workspace.pk, prefix="history")
    log = Path(tempfile.gettempdir()) / "vera-bench-history-gunicorn.log"
    latencies: list[float] = []
    right = right_stated = asked = cited = stale = right_now = 0
    with (
        http_server(embedder="hashing", log=log) as base,
        httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}) as client,
    ):
        for name, period, instant in _probes(timelines):
            began = time.perf_counter()
            host, _ = _first_host(client, name, instant)
            latencies.append((time.perf_counter() - began) * 1000)
            asked += 1
            right += host == period.host
            host, _ = _first_host(client, name, instant, stated=True)
            right_stated += host == period.host
        for name, periods in timelines.items():
            host, hits = _first_host(client, name, None)
            right_now += host == periods[-1].host
            for hit in hits:
                cited += 1
                stale += status.get(hit["claim_id"]) != "published"
    print(
        f"as of a period    {right} of {asked} questions answer that period's host first "
        f"({right / max(asked, 1):.1%}); p50 {nearest_rank(latencies, 50):.1f} ms"
    )
    print(
        f"date in question  {right_stated} of {asked} (no as_of; the date in three forms: "
        f"on 4 March 2019, on 2019-03-04, as of March 4, 2019) answer that period's host "
        f"first ({right_stated / max(asked, 1):.1%})"
    )
    print(f"now               {right_now} of {len(timelines)} answer the last host first")
    print(f"stale citations   {stale} of {cited} cited claims at now")
    return 0


if __name__ == "__main__":
    sys.exit(main())
