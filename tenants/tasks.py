"""Celery plumbing: a typed task decorator, and the base for tenant-scoped work under RLS."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, cast

from celery import Task, shared_task
from celery.result import AsyncResult

from tenants import rls
from tenants.domain.access import Principal
from tenants.domain.scopes import Role
from tenants.models import Scope


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


class TenantTask(Task):  # type: ignore[misc]  # celery ships no type hints: Task is Any
    """Base for tasks over tenant data: takes `group_ids=[...]` and runs inside them.

    The caller passes the groups it acts for (captured when it enqueues); unknown
    group ids are dropped, so a stale or forged id reaches nothing.
    """

    abstract = True
    task_role = Role.CONTRIBUTOR

    def __call__(self, *args: Any, group_ids: list[str], **kwargs: Any) -> Any:
        known = Scope.objects.filter(group_id__in=group_ids).values_list("group_id", flat=True)
        principal = Principal(label=f"task:{self.name}", roles=dict.fromkeys(known, self.task_role))
        with rls.tenant_context(principal):
            return super().__call__(*args, **kwargs)
