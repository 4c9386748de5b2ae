"""The nightly learning jobs as database schedule rows an operator can edit (no deploy).

Created once; later migrations never overwrite them, so a changed time or a disabled
job stays as the operator left it. Both run in the maintenance lane at night (UTC).
"""

from django.db import migrations

JOBS = (
    ("retrieval-nightly-calibration", "retrieval.calibrate_workspaces", "30", "2"),
    ("retrieval-nightly-evaluation", "retrieval.evaluate_workspaces", "0", "3"),
)


def create(apps, schema_editor):
    crontabs = apps.get_model("django_celery_beat", "CrontabSchedule")
    tasks = apps.get_model("django_celery_beat", "PeriodicTask")
    for name, task, minute, hour in JOBS:
        if tasks.objects.filter(name=name).exists():
            continue
        crontab, _ = crontabs.objects.get_or_create(
            minute=minute,
            hour=hour,
            day_of_week="*",
            day_of_month="*",
            month_of_year="*",
            timezone="UTC",
        )
        tasks.objects.create(
            name=name,
            task=task,
            crontab=crontab,
            queue="maintenance",
            description="VERA learning loop (see retrieval/tasks.py)",
        )


def remove(apps, schema_editor):
    apps.get_model("django_celery_beat", "PeriodicTask").objects.filter(
        name__in=[name for name, *_ in JOBS]
    ).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("retrieval", "0003_learning_loop"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [migrations.RunPython(create, remove)]
