"""Maintenance-lane jobs: nightly calibration, golden-set evaluation and the expiry of
served context packs; re-embedding after a workspace's embedding model is switched and
building knowledge snapshots (every minute, from beat).

Beat sends them on the schedule in the database (django-celery-beat's PeriodicTask
rows `retrieval-nightly-calibration`, `retrieval-nightly-evaluation`,
`retrieval-nightly-question-words` and `retrieval-nightly-pack-expiry`, created by
migrations, editable in the admin without a deploy). Each covers every workspace that
has something to do, one workspace at a time; the learning jobs record a run per
workspace keyed by the Celery task id: a re-delivered message finds its runs and does
not repeat them. A workspace whose run is in progress elsewhere is skipped and reported.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Iterable

from celery import current_task
from django.conf import settings
from django.utils import timezone

from common.jobs import task
from retrieval import usecases
from retrieval.domain.evaluation import Floors
from retrieval.models import CalibrationRun, EvaluationRun, GoldenQuery, WeightSet
from retrieval.selectors import groups_with_golden, groups_with_packs_before, groups_with_votes
from retrieval.usecases import RunInProgress
from tenants import rls
from tenants.domain.access import Principal
from tenants.selectors import principal_system

logger = logging.getLogger(__name__)


def learning_window() -> dt.timedelta:
    return dt.timedelta(days=settings.VERA_LEARNING__WINDOW_DAYS)


def _run_key(prefix: str) -> str:
    request_id = getattr(getattr(current_task, "request", None), "id", None)
    return f"{prefix}:{request_id}" if request_id else ""


def evaluator(
    actor: Principal, *, trigger: str, run_key: str = ""
) -> Callable[[WeightSet], object]:
    """Evaluate a candidate set on its workspace's golden set (for auto-activation)."""

    def evaluate(weight_set: WeightSet) -> object:
        if not _has_golden(weight_set.group_id):
            return None
        return usecases.evaluation_run(
            actor=actor, group_id=weight_set.group_id, now=timezone.now(),
            trigger=trigger, floors=Floors.parse(settings.VERA_LEARNING__FLOORS),
            weight_set_id=weight_set.pk, run_key=f"{run_key}:candidate" if run_key else "",
        )  # fmt: skip

    return evaluate


def _has_golden(group_id: str) -> bool:
    with rls.tenant_context(principal_system("learning", group_ids=[group_id])):
        return GoldenQuery.objects.filter(group_id=group_id, enabled=True).exists()


def each_workspace(
    kind: str, group_ids: list[str], run: Callable[[str], CalibrationRun | EvaluationRun]
) -> dict[str, str]:
    """`run` for each workspace in turn; what happened to each (its status, or why not).

    One workspace's failure is logged and reported, and never ends the others' turn.
    """
    outcomes: dict[str, str] = {}
    for group_id in group_ids:
        try:
            done = run(group_id)
        except RunInProgress as busy:
            outcomes[group_id] = f"skipped: {busy}"
        except Exception as error:  # one workspace's failure must not end the others' run
            logger.exception("%s of %s failed", kind, group_id)
            outcomes[group_id] = f"error: {type(error).__name__}: {error}"
        else:
            outcomes[group_id] = f"{done.status}: {done.message}"
    return outcomes


def calibrate_groups(
    group_ids: list[str], *, trigger: str, run_key: str = "", activate: bool | None = None
) -> dict[str, str]:
    """One calibration per workspace (see `each_workspace`)."""
    now = timezone.now()
    auto = settings.VERA_LEARNING__AUTO_ACTIVATE if activate is None else activate

    def calibrate(group_id: str) -> CalibrationRun:
        actor = principal_system("calibration", group_ids=[group_id])
        with rls.tenant_context(actor):
            return usecases.calibration_run(
                actor=actor, group_id=group_id, now=now, trigger=trigger, run_key=run_key,
                window=learning_window(),
                min_samples_per_class=settings.VERA_LEARNING__MIN_SAMPLES,
                learning_rate=settings.VERA_LEARNING__RATE, activate=auto,
                evaluate=evaluator(actor, trigger=trigger, run_key=run_key),
            )  # fmt: skip

    return each_workspace("calibration", group_ids, calibrate)


def evaluate_groups(
    group_ids: list[str], *, trigger: str, run_key: str = "", floors: Floors | None = None
) -> dict[str, str]:
    """One golden-set evaluation per workspace with its active weights."""
    gate = floors if floors is not None else Floors.parse(settings.VERA_LEARNING__FLOORS)

    def evaluate(group_id: str) -> EvaluationRun:
        return usecases.evaluation_run(
            actor=principal_system("evaluation", group_ids=[group_id]), group_id=group_id,
            now=timezone.now(), trigger=trigger, floors=gate, run_key=run_key,
        )  # fmt: skip

    return each_workspace("evaluation", group_ids, evaluate)


@task(name="retrieval.calibrate_workspaces", acks_late=True)
def calibrate_workspaces() -> dict[str, str]:
    """Nightly: calibrate every workspace with votes on hits logged in the window."""
    groups = groups_with_votes(timezone.now() - learning_window())
    return calibrate_groups(groups, trigger="schedule", run_key=_run_key("task"))


@task(name="retrieval.evaluate_workspaces", acks_late=True)
def evaluate_workspaces() -> dict[str, str]:
    """Nightly: evaluate every workspace's golden set with its active weights."""
    groups = groups_with_golden()
    return evaluate_groups(groups, trigger="schedule", run_key=_run_key("task"))


@task(name="retrieval.learn_question_words", acks_late=True)
def learn_question_words() -> dict[str, str]:
    """Nightly: in every workspace with votes in the learning window, the question words
    its people use for a relation its ontology does not list, kept as suggestions for an
    admin (`retrieval.services.word_learning`); how many wait in each."""
    since = timezone.now() - learning_window()

    def learn(group_id: str) -> str:
        pending = usecases.question_words_learn(group_id=group_id, since=since)
        return f"{pending} suggestions pending"

    return in_each("question-words", groups_with_votes(since), learn)


def in_each(job: str, group_ids: Iterable[str], work: Callable[[str], str]) -> dict[str, str]:
    """`work` for each workspace in turn, in a context of that workspace alone (a
    principal of `job`); what it said of each, or the error that ended its turn (logged;
    one workspace's failure never stops the others')."""
    outcomes: dict[str, str] = {}
    for group_id in group_ids:
        try:
            with rls.tenant_context(principal_system(job, group_ids=[group_id])):
                outcomes[group_id] = work(group_id)
        except Exception as error:  # one workspace's failure must not stop the others'
            logger.exception("%s of %s failed", job, group_id)
            outcomes[group_id] = f"error: {type(error).__name__}: {error}"
        else:
            logger.info("%s of %s: %s", job, group_id, outcomes[group_id])
    return outcomes


@task(name="retrieval.index_catch_up", acks_late=True)
def index_catch_up_workspaces() -> dict[str, str]:
    """Every minute: re-embed, a bounded batch at a time, the documents of workspaces
    whose embedding model was switched, and embed with a workspace's companion model the
    documents without its vector (see `retrieval.services.embedding`)."""
    outcomes: dict[str, str] = {}
    # Found across every group by a system finder; each then in a context of its own.
    for group_id, stale in usecases.groups_to_catch_up():
        try:
            with rls.tenant_context(principal_system("index-catch-up", group_ids=[group_id])):
                done = usecases.index_catch_up(group_id=group_id)
                left, total = usecases.catch_up_progress(group_id)
        except Exception as error:  # one workspace's failure must not stop the others'
            logger.exception("re-embedding %s failed", group_id)
            outcomes[group_id] = f"error: {type(error).__name__}: {error}"
            continue
        if done or stale:  # a companion group with nothing missing is not news
            outcomes[group_id] = f"re-embedded {done}; {left} of {total} left"
            logger.info("re-embedding %s: %s", group_id, outcomes[group_id])
    return outcomes


@task(name="retrieval.snapshots_build", acks_late=True)
def snapshots_build(snapshot_id: int | None = None) -> dict[int, str]:
    """Build the snapshots waiting to be (one, after its request; all, every minute from
    beat, so a build that died with its worker, or lost a race with an erasure, is
    built again)."""
    waiting = usecases.snapshots_building()
    outcomes: dict[int, str] = {}
    for pk, group_id in waiting:
        if snapshot_id is not None and pk != snapshot_id:
            continue
        actor = principal_system("snapshots", group_ids=[group_id])
        try:
            built = usecases.snapshot_build(pk, actor=actor)
        except Exception as error:  # one snapshot's failure must not stop the others'
            outcomes[pk] = f"error: {type(error).__name__}: {error}"
        else:
            outcomes[pk] = f"sealed: {built.counts}" if built is not None else "nothing to do"
    return outcomes


@task(name="retrieval.expire_context_packs", acks_late=True)
def expire_context_packs() -> dict[str, str]:
    """Nightly: delete the served context packs older than VERA_CONTEXT__PACK_RETENTION_DAYS
    (0 keeps them), one workspace at a time; what was deleted where."""
    days = settings.VERA_CONTEXT__PACK_RETENTION_DAYS
    if days <= 0:
        return {}
    before = timezone.now() - dt.timedelta(days=days)

    def expire(group_id: str) -> str:
        deleted = usecases.context_packs_expire(group_id=group_id, before=before)
        return f"deleted {deleted} served before {before.isoformat()}"

    return in_each("pack-expiry", groups_with_packs_before(before), expire)


@task(name="retrieval.flush_provider_usage")
def flush_provider_usage() -> int:
    """Every minute: add the provider usage every process metered to each workspace's
    day rows (the admin's cost page); how many rows were written to."""
    return usecases.provider_usage_flush()
