"""The nightly learning tasks' results become bounded counters: one sample per workspace
run, labelled by its status or outcome only, never by the workspace."""

from __future__ import annotations

from prometheus_client import REGISTRY

from vera import metrics
from vera.celery import _learning_counted


class _Task:
    def __init__(self, name: str) -> None:
        self.name = name


def _runs(name: str, label: str, value: str) -> float:
    return REGISTRY.get_sample_value(f"{name}_total", {label: value}) or 0.0


def test_each_workspace_run_of_a_nightly_task_is_counted_by_its_outcome() -> None:
    before = {
        outcome: _runs("vera_calibration_runs", "outcome", outcome)
        for outcome in ("activated", "too_few_samples", "error", "skipped")
    }
    result = {
        "w:1111": "activated: weights v3 active",
        "w:2222": "too_few_samples: 4 helpful, 2 unhelpful (30 each needed)",
        "w:3333": "error: OperationalError: server closed the connection",
        "w:4444": "skipped: a calibration of w:4444 is running",
    }

    _learning_counted(sender=_Task("retrieval.calibrate_workspaces"), retval=result,
                      state="SUCCESS")  # fmt: skip

    after = {outcome: _runs("vera_calibration_runs", "outcome", outcome) for outcome in before}
    assert {outcome: after[outcome] - before[outcome] for outcome in before} == dict.fromkeys(
        before, 1.0
    )


def test_an_unexpected_outcome_is_counted_as_other_and_no_workspace_becomes_a_label() -> None:
    before = _runs("vera_eval_runs", "status", "other")
    metrics.learning_finished(
        "retrieval.evaluate_workspaces", {"w:5555": "Something New (with spaces): detail"}
    )
    assert _runs("vera_eval_runs", "status", "other") == before + 1
    exported = metrics.exposition().decode()
    assert "w:5555" not in exported
    assert 'status="something new' not in exported


def test_other_tasks_and_failed_runs_are_not_counted() -> None:
    before = _runs("vera_eval_runs", "status", "passed")
    _learning_counted(sender=_Task("retrieval.evaluate_workspaces"),
                      retval={"w:6666": "passed: ndcg 0.71"}, state="FAILURE")  # fmt: skip
    metrics.learning_finished("curation.process_outbox", {"w:6666": "passed: x"})
    assert _runs("vera_eval_runs", "status", "passed") == before
