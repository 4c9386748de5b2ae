"""The base for Celery tasks over tenant data: they run inside the groups they are given.

Not an entrypoint (no task is declared here), so every app's `tasks.py` may use it.
"""

from __future__ import annotations

from typing import Any

from celery import Task

from tenants import rls
from tenants.domain.access import Principal
from tenants.domain.scopes import Role
from tenants.models import Scope


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
