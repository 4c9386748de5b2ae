"""Served context packs expire: a system finder for the workspaces holding packs older
than a time, and the nightly job as a database schedule row an operator can edit.

The finder returns group ids and counts, never content (see `tenants.rls.system_finder`);
the job then deletes each workspace's old packs in a context of that workspace alone.
The schedule row is created once and never overwritten, as the learning jobs' are.
"""

from typing import Any

from django.db import migrations

from tenants import rls

GROUPS_WITH_OLD_PACKS = """
    SELECT p.group_id, count(*) FROM retrieval_contextpack p
    WHERE p.created_at < p_before
    GROUP BY p.group_id
    ORDER BY p.group_id
"""

JOB = ("retrieval-nightly-pack-expiry", "retrieval.expire_context_packs", "15", "4")


def create(apps: Any, schema_editor: Any) -> None:
    crontabs = apps.get_model("django_celery_beat", "CrontabSchedule")
    tasks = apps.get_model("django_celery_beat", "PeriodicTask")
    name, task, minute, hour = JOB
    if tasks.objects.filter(name=name).exists():
        return
    crontab, _ = crontabs.objects.get_or_create(
        minute=minute, hour=hour, day_of_week="*", day_of_month="*", month_of_year="*",
        timezone="UTC",
    )  # fmt: skip
    tasks.objects.create(
        name=name, task=task, crontab=crontab, queue="maintenance",
        description="VERA: delete served context packs past VERA_CONTEXT__PACK_RETENTION_DAYS",
    )  # fmt: skip


def remove(apps: Any, schema_editor: Any) -> None:
    apps.get_model("django_celery_beat", "PeriodicTask").objects.filter(name=JOB[0]).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("retrieval", "0019_context_packs"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [
        rls.system_reads("retrieval_contextpack"),
        rls.system_finder(
            "vera_groups_with_packs_before(p_before timestamptz)",
            returns="TABLE (group_id text, packs bigint)",
            body=GROUPS_WITH_OLD_PACKS,
        ),
        migrations.RunPython(create, remove),
    ]
