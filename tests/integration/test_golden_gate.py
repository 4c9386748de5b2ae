"""The ranking quality gate: a SciFact golden set, searched for real, must stay above its floors.

tests/data/scifact_golden/ (made by bench/make_scifact_golden.py, see its README) is
ingested through the real pipeline as one tier-1 Markdown source, indexed, imported with
`golden_import_beir`, and evaluated with `evaluation_run` through `bootstrap.search()`.
The floors in floors.json sit just below the measured scores, so a change that ranks
worse fails CI. A blend that ignores relevance must fail the same floors: the gate can
fail.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Iterator
from pathlib import Path

import dj_database_url
import psycopg
import pytest
from django.core.management import call_command
from django.db import connections

from curation.domain.outbox import Consumer
from retrieval import bootstrap
from retrieval.domain.evaluation import Floors
from retrieval.domain.ranking import SIGNALS, Weights
from retrieval.models import EvaluationRun, WeightSet
from retrieval.services.evaluation import evaluation_run, golden_import_beir
from retrieval.services.weights import weight_set_create
from tenants import rls
from tests.support.ingest import drain_outbox, ingest_folder
from tests.support.tenancy import Tenant, make_tenant

pytestmark = pytest.mark.django_db
DATA = Path(__file__).resolve().parents[1] / "data" / "scifact_golden"
# Every abstract gets the same timestamp and the evaluation a fixed clock: recency is
# then equal for all hits, and the scores do not drift with the date.
WRITTEN = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
NOW = WRITTEN + dt.timedelta(days=1)


def _floors() -> Floors:
    return Floors(json.loads((DATA / "floors.json").read_text(encoding="utf-8")))


def _write_corpus(root: Path) -> int:
    """Each abstract as `<id>.md` ("# title", blank line, text), as bench/search.py does."""
    count = 0
    with (DATA / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            path = root / f"{row['_id']}.md"
            path.write_text(f"# {row['title']}\n\n{row['text']}\n", encoding="utf-8")
            os.utime(path, (WRITTEN.timestamp(), WRITTEN.timestamp()))
            count += 1
    return count


def _empty_tables() -> None:
    """Empty every table as after a transactional test (`flush`: TRUNCATE, sequences kept)."""
    call_command("flush", interactive=False, verbosity=0, reset_sequences=False)


def _analyze_empty_tables() -> None:
    """ANALYZE the emptied tables as their owner (the app role may not), before the ingest.

    The ingest writes its page in one transaction. Should autovacuum analyze a table
    meanwhile (earlier tests' writes make it due), it counts none of those uncommitted
    rows and records 0 rows over N pages; the planner then takes the table to hold one
    row however many it holds, and the rest of the ingest runs nested loops over whole
    tables (over ten minutes instead of seconds, seen here). Analyzed now, empty tables
    record 0 pages and are not due again, so the planner sizes them by their pages.
    """
    owner_url = os.environ.get("DATABASE_OWNER_URL")
    if not owner_url:
        return
    owner = dj_database_url.parse(owner_url)
    with psycopg.connect(
        host=owner["HOST"], port=owner["PORT"], user=owner["USER"], password=owner["PASSWORD"],
        dbname=connections["default"].settings_dict["NAME"], autocommit=True,
    ) as conn:  # fmt: skip
        conn.execute("ANALYZE")


@pytest.fixture(scope="module")
def golden(
    django_db_setup: None,
    django_db_blocker: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Tenant]:
    """A workspace with the golden corpus indexed and its 40 queries imported, built once.

    Committed, job by job, as in production: indexing inside a test's transaction is
    about three times slower (every index job rewrites the same statistics rows, and no
    version of them can be pruned before the transaction ends). The tables are emptied
    before and after, as around a transactional test.
    """
    root = tmp_path_factory.mktemp("scifact-golden")
    assert _write_corpus(root) == 246
    with django_db_blocker.unblock():  # type: ignore[attr-defined]
        _empty_tables()
        _analyze_empty_tables()
        try:
            tenant = make_tenant("Golden")
            ingest_folder(tenant, root, name="scifact")
            drain_outbox(Consumer.INDEX)  # the graph is left out: search does not read it
            with rls.tenant_context(tenant.principal(tenant.admin)):
                report = golden_import_beir(group_id=tenant.workspace.group_id, folder=DATA)
            assert (report.created, report.skipped) == (40, [])
            yield tenant
        finally:
            _empty_tables()


def _evaluate(tenant: Tenant, weight_set_id: int | None = None) -> EvaluationRun:
    return evaluation_run(
        actor=tenant.principal(tenant.reviewer), group_id=tenant.workspace.group_id,
        search=bootstrap.search(), embedder_model=bootstrap.providers().embedder().model,
        now=NOW, trigger="ci", floors=_floors(), weight_set_id=weight_set_id,
    )  # fmt: skip


def test_ranking_passes_the_recorded_floors_when_the_pipeline_is_unchanged(
    golden: Tenant,
) -> None:
    run = _evaluate(golden)
    measured = {"ndcg_at_10": run.ndcg_at_10, "hit_at_10": run.hit_at_10, "mrr": run.mrr}
    assert run.queries == 40
    assert run.status == EvaluationRun.Status.PASSED, (run.message, measured)


def test_the_gate_fails_when_the_blend_ignores_relevance(golden: Tenant) -> None:
    # Recency is equal for every abstract here (see WRITTEN), so a blend of recency alone
    # scores all candidates alike and orders them by claim id: a broken ranker.
    with rls.tenant_context(golden.principal(golden.admin)):
        blind = weight_set_create(
            group_id=golden.workspace.group_id,
            weights=Weights.from_mapping({**dict.fromkeys(SIGNALS, 0.0), "recency": 1.0}),
            origin=WeightSet.Origin.MANUAL,
        )
    run = _evaluate(golden, weight_set_id=blind.pk)
    assert run.status == EvaluationRun.Status.FAILED
    assert {failure.split()[0] for failure in run.failures} == set(_floors().minimums)
