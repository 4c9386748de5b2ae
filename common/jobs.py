"""Celery plumbing every app's tasks share: a task decorator that keeps the body's types."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, cast

from celery import shared_task
from celery.result import AsyncResult


class TaskFunction[**P, R](Protocol):
    """A task as its callers see it: the body, callable in-process, and how to enqueue it."""

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R: ...

    def delay(self, *args: P.args, **kwargs: P.kwargs) -> AsyncResult: ...

    def apply_async(
        self,
        args: Sequence[object] | None = None,
        kwargs: Mapping[str, object] | None = None,
        **options: Any,
    ) -> AsyncResult: ...


def task[**P, R](*, name: str, **options: Any) -> Callable[[Callable[P, R]], TaskFunction[P, R]]:
    """Celery's `shared_task`, keeping the body's signature so `delay(...)` is type-checked."""
    # Celery ships no type hints: shared_task's decorator is Any to mypy.
    return cast("Callable[[Callable[P, R]], TaskFunction[P, R]]", shared_task(name=name, **options))
