"""Outbox tick benchmark: what one beat tick of the outbox worker costs with 10,000 workspaces.

    .venv/bin/python -m bench.outbox_tick [--workspaces 10000] [--busy 5] [--jobs 20]
                                          [--wide 1000] [--repeat 7]

On the test-profile servers and a fresh `vera_bench_outbox_tick` database, as the
application role. Times, median of `--repeat` runs, in ms:
- an idle tick (no due job anywhere);
- a tick with work: `--busy` workspaces with `--jobs` pending index jobs each;
- a wide tick: `--wide` workspaces with one job each (several claim batches);
each the old way (one principal listing every scope, so every policy check compares a
row's group with all of them) and the new way (`process_outbox`: the groups with due
work found in one query, each batch in a context of only those groups). The handler is
a no-op, so the figures are the tick's own cost, not indexing. Asserts nothing about time.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import time
from collections.abc import Callable

from bench.common import analyze, setup_django

KIND = "bench.touch"


def _median_ms(run: Callable[[], object], reset: Callable[[], None], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        reset()
        started = time.perf_counter()
        run()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


class NoopProviders:
    """The outbox part of curation's providers, with a handler that does nothing."""

    def outbox_handlers(self, consumer: object) -> dict[str, Callable[[object], None]]:
        return {KIND: lambda job: None}

    def outbox_prepare(self, consumer: object) -> None:
        return None

    def outbox_batch(self, consumer: object) -> None:
        return None

    def outbox_available(self, consumer: object) -> str:
        return ""


def _world(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """The workspaces (scopes in bulk) and a done job per future pending one; (busy, wide)."""
    from django.utils import timezone

    from curation.domain.outbox import Consumer, Priority
    from curation.models import OutboxJob
    from tenants import rls
    from tenants.domain.scopes import ScopeKind, new_group_id
    from tenants.models import Scope
    from tenants.selectors import principal_system

    org = Scope.objects.create(
        kind=ScopeKind.ORGANISATION, name="Bench", group_id=new_group_id(ScopeKind.ORGANISATION)
    )
    Scope.objects.bulk_create(
        (Scope(kind=ScopeKind.WORKSPACE, name=f"ws {n}", parent=org,
               group_id=new_group_id(ScopeKind.WORKSPACE))
         for n in range(args.workspaces)),
        batch_size=2000,
    )  # fmt: skip
    groups = sorted(Scope.objects.filter(parent=org).values_list("group_id", flat=True))
    busy, wide = groups[: args.busy], groups[args.busy : args.busy + args.wide]
    owners = [g for g in busy for _ in range(args.jobs)] + wide
    with rls.tenant_context(principal_system("bench", group_ids=busy + wide)):
        OutboxJob.objects.bulk_create(
            (OutboxJob(group_id=g, consumer=Consumer.INDEX, priority=Priority.BULK, kind=KIND,
                       payload={}, available_at=timezone.now(), status=OutboxJob.Status.DONE)
             for g in owners),
            batch_size=2000,
        )  # fmt: skip
    return busy, wide


def _reset(groups: list[str], pending: list[str]) -> Callable[[], None]:
    """Every job of the groups `pending` due again, the others done (not timed)."""
    from django.utils import timezone

    from curation.models import OutboxJob
    from tenants import rls
    from tenants.selectors import principal_system

    def reset() -> None:
        with rls.tenant_context(principal_system("bench", group_ids=groups)):
            jobs = OutboxJob.objects.all()
            jobs.update(status=OutboxJob.Status.DONE)
            jobs.filter(group_id__in=pending).update(
                status=OutboxJob.Status.PENDING, attempts=0,
                available_at=timezone.now() - dt.timedelta(minutes=1),
            )  # fmt: skip

    return reset


def _old_tick() -> None:
    """The tick as it was: one principal of every scope, batches until none is left."""
    from curation.domain.outbox import Consumer
    from curation.services.outbox import outbox_process
    from curation.tasks import OUTBOX_BATCHES_PER_RUN
    from tenants.selectors import principal_system

    system, handlers = principal_system("outbox"), NoopProviders().outbox_handlers(None)
    for _ in range(OUTBOX_BATCHES_PER_RUN):
        if not outbox_process(
            consumer=Consumer.INDEX, handlers=handlers, limit=200, principal=system
        ):
            break


def _new_tick() -> None:
    from curation.tasks import process_outbox

    process_outbox(consumer="index")


def _old_lane_load() -> None:
    """The backpressure count as it was: under a principal of every scope."""
    from django.utils import timezone

    from curation.models import OutboxJob
    from tenants import rls
    from tenants.selectors import principal_system

    with rls.tenant_context(principal_system("backpressure")):
        OutboxJob.objects.filter(
            status=OutboxJob.Status.PENDING, available_at__lte=timezone.now()
        ).count()


def _new_lane_load() -> None:
    from django.utils import timezone

    from curation.selectors import outbox_lane_load

    outbox_lane_load(now=timezone.now())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspaces", type=int, default=10_000)
    parser.add_argument("--busy", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=20)
    parser.add_argument("--wide", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    os.environ.setdefault("VERA_BENCH__DB", "vera_bench_outbox_tick")
    setup_django()
    from curation import bootstrap
    from tenants.selectors import principal_system

    bootstrap.install(NoopProviders())  # type: ignore[arg-type]
    started = time.perf_counter()
    busy, wide = _world(args)
    analyze()
    print(f"set-up           {args.workspaces} workspaces in {time.perf_counter() - started:.1f} s")
    cases = [
        ("idle tick", [], _old_tick, _new_tick),
        (f"tick, {args.busy}x{args.jobs} jobs", busy, _old_tick, _new_tick),
        (f"tick, {args.wide}x1 jobs", wide, _old_tick, _new_tick),
        (f"lane load, {args.wide}x1 jobs", wide, _old_lane_load, _new_lane_load),
    ]
    print(f"{'':<28}{'old ms':>10}{'new ms':>10}   (median of {args.repeat})")
    for name, pending, old, new in cases:
        old_ms = _median_ms(old, _reset(busy + wide, pending), args.repeat)
        new_ms = _median_ms(new, _reset(busy + wide, pending), args.repeat)
        print(f"{name:<28}{old_ms:>10.1f}{new_ms:>10.1f}")
    system_ms = _median_ms(lambda: principal_system("x"), lambda: None, args.repeat)
    print(f"principal_system('x') alone: {system_ms:.1f} ms ({args.workspaces + 1} scopes)")


if __name__ == "__main__":
    main()
