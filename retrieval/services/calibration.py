"""Calibration runs: logged hits and their votes -> a candidate weight set (spec rule).

The samples are the votes given on hits logged within a window, each with the signal
vector its hit was ranked by. `retrieval.domain.calibration.calibrate` applies the
mean-difference rule with the minimum-sample guard. Every run is recorded, including
the ones that change nothing, with the counts and separations that decided it.

A run with a `run_key` (the Celery task id) happens at most once per workspace: a
re-delivered task finds the recorded run. A per-workspace advisory lock keeps two runs
of one workspace from overlapping.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable

from django.db import IntegrityError, connection, transaction

from retrieval.domain.calibration import MIN_SAMPLES_PER_CLASS, FeedbackSample, calibrate
from retrieval.domain.ranking import DEFAULT_UNDERSTOOD, DEFAULT_WEIGHTS, SIGNALS, Signals
from retrieval.models import CalibrationRun, Feedback, WeightSet
from retrieval.services.weights import (
    NeedsConfirmation,
    weight_set_activate,
    weight_set_create,
    weights_of,
)
from tenants.domain.access import Principal

logger = logging.getLogger(__name__)

DEFAULT_WINDOW = dt.timedelta(days=30)


class RunInProgress(Exception):
    """Another run of the same kind holds this workspace's lock."""


def try_lock(kind: str, group_id: str) -> bool:
    """This transaction's lock on (kind, workspace); False when another holds it."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_try_advisory_xact_lock(hashtext(%s))", [f"vera.{kind}:{group_id}"]
        )
        row = cursor.fetchone()
    return bool(row and row[0])


def calibration_samples(
    *, group_id: str, since: dt.datetime, until: dt.datetime
) -> tuple[list[FeedbackSample], int]:
    """Each vote on a hit logged in [since, until) with the hit's signals; and how many
    votes were skipped because their hit's logged vector is not six valid signals."""
    votes = Feedback.objects.filter(
        group_id=group_id, hit__created_at__gte=since, hit__created_at__lt=until
    ).values_list("helpful", "hit__signals")
    samples: list[FeedbackSample] = []
    skipped = 0
    for helpful, logged in votes.iterator(chunk_size=2000):
        try:
            signals = Signals(**{name: float(logged[name]) for name in SIGNALS})
        except (KeyError, TypeError, ValueError):
            skipped += 1
            continue
        understood = logged.get("understood", 0.0)  # hits logged before it was: 0
        samples.append(FeedbackSample(signals, helpful, float(understood or 0.0)))
    return samples, skipped


def calibration_run(
    *,
    actor: Principal,
    group_id: str,
    now: dt.datetime,
    trigger: str,
    run_key: str = "",
    window: dt.timedelta = DEFAULT_WINDOW,
    min_samples_per_class: int = MIN_SAMPLES_PER_CLASS,
    learning_rate: float = 1.0,
    activate: bool = False,
    evaluate: Callable[[WeightSet], object] | None = None,
) -> CalibrationRun:
    """Calibrate one workspace; store the candidate; activate it when asked and safe.

    With `activate`, a candidate is first evaluated on the golden set (`evaluate`, when
    the workspace has one) and activated only if that raises no doubt (see
    `weight_set_activate`); otherwise it stays a candidate and the run says why.
    Raises RunInProgress when another calibration of the workspace is running.
    """
    if run_key and (done := _recorded(group_id, run_key)) is not None:
        return done
    try:
        run = _calibrate(
            group_id=group_id, now=now, trigger=trigger, run_key=run_key, window=window,
            min_samples_per_class=min_samples_per_class, learning_rate=learning_rate,
        )  # fmt: skip
    except IntegrityError:  # the same key recorded concurrently: that run is the answer
        done = _recorded(group_id, run_key)
        if done is None:
            raise
        return done
    if activate and run.candidate is not None:
        _activate(run, actor=actor, evaluate=evaluate)
    return run


def _recorded(group_id: str, run_key: str) -> CalibrationRun | None:
    return CalibrationRun.objects.filter(group_id=group_id, run_key=run_key).first()


@transaction.atomic
def _calibrate(
    *,
    group_id: str,
    now: dt.datetime,
    trigger: str,
    run_key: str,
    window: dt.timedelta,
    min_samples_per_class: int,
    learning_rate: float,
) -> CalibrationRun:
    if not try_lock("calibration", group_id):
        raise RunInProgress(f"a calibration of {group_id} is already running")
    since = now - window
    samples, skipped = calibration_samples(group_id=group_id, since=since, until=now)
    helpful = sum(1 for sample in samples if sample.helpful)
    unhelpful = len(samples) - helpful
    active = WeightSet.objects.filter(group_id=group_id, active=True).first()
    result = calibrate(
        samples,
        min_samples_per_class=min_samples_per_class,
        # What ranks now: the active set, or the built-in default when none is.
        previous=weights_of(active) if active else DEFAULT_WEIGHTS,
        learning_rate=learning_rate,
        previous_understood=active.understood if active else DEFAULT_UNDERSTOOD,
    )
    run = CalibrationRun(
        group_id=group_id, run_key=run_key, trigger=trigger, started_at=now,
        window_start=since, window_end=now, helpful=helpful, unhelpful=unhelpful,
    )  # fmt: skip
    note = f" ({skipped} votes skipped: their hit has no valid signal vector)" if skipped else ""
    if result is None:
        if min(helpful, unhelpful) < min_samples_per_class:
            run.status = CalibrationRun.Status.TOO_FEW_SAMPLES
            run.message = (
                f"{helpful} helpful and {unhelpful} unhelpful votes in the window; each class "
                f"needs {min_samples_per_class}. Weights unchanged.{note}"
            )
        else:
            run.status = CalibrationRun.Status.NO_SIGNAL
            run.message = f"No signal is higher on helpful hits. Weights unchanged.{note}"
    else:
        run.separations = dict(result.separations)
        run.candidate = weight_set_create(
            group_id=group_id, weights=result.weights, origin=WeightSet.Origin.CALIBRATION,
            helpful=result.helpful, unhelpful=result.unhelpful, separations=result.separations,
            understood=result.understood,
        )  # fmt: skip
        run.status = CalibrationRun.Status.CANDIDATE
        run.message = f"Candidate weights v{run.candidate.version} stored.{note}"
    run.finished_at = now
    run.save()
    return run


def _activate(
    run: CalibrationRun, *, actor: Principal, evaluate: Callable[[WeightSet], object] | None
) -> None:
    candidate = run.candidate
    assert candidate is not None  # noqa: S101 - checked by the caller
    if evaluate is not None:
        evaluate(candidate)
    try:
        outcome = weight_set_activate(
            actor=actor, weight_set_id=candidate.pk, reason=f"calibration run {run.pk}"
        )
    except NeedsConfirmation as doubt:
        run.message = f"{run.message} Not activated: {doubt}"
        CalibrationRun.objects.filter(pk=run.pk).update(message=run.message)
        logger.info("calibration run %s: candidate kept, %s", run.pk, doubt)
        return
    run.status = CalibrationRun.Status.ACTIVATED
    run.message = f"{run.message} {outcome.message}"
    CalibrationRun.objects.filter(pk=run.pk).update(status=run.status, message=run.message)
