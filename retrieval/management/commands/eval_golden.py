"""Evaluate golden sets through the real search; exits non-zero when a run fails."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from retrieval import usecases
from retrieval.domain.evaluation import Floors
from retrieval.models import EvaluationRun, GoldenQuery, WeightSet
from tenants import rls
from tenants.commands import checked_groups
from tenants.selectors import principal_system


class Command(BaseCommand):
    help = (
        "Run each workspace's golden set (or --group G) with the active weights or "
        "--weights ID; --fail-under metric=value,... (default VERA_LEARNING__FLOORS) gates it."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--group", action="append", help="group id (repeatable)")
        parser.add_argument("--weights", type=int, help="evaluate this weight set's id")
        parser.add_argument(
            "--fail-under",
            help="floors, e.g. ndcg_at_10=0.5,hit_at_10=0.8 (metrics: hit_at_1, hit_at_3, "
            "hit_at_10, mrr, ndcg_at_10)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        from django.conf import settings

        try:
            floors = Floors.parse(options["fail_under"] or settings.VERA_LEARNING__FLOORS)
        except ValueError as error:
            raise CommandError(str(error)) from None
        groups = self._groups(options)
        failed = []
        for group_id in groups:
            actor = principal_system("eval_golden", group_ids=[group_id])
            try:
                run = usecases.evaluation_run(
                    actor=actor, group_id=group_id, now=timezone.now(),
                    trigger="command", floors=floors, weight_set_id=options["weights"],
                )  # fmt: skip
            except WeightSet.DoesNotExist:
                raise CommandError(
                    f"weight set {options['weights']} does not exist in {group_id}"
                ) from None
            self.stdout.write(
                f"{group_id}: {run.status} (weights v{run.weight_version}, {run.queries} queries, "
                f"hit@1 {run.hit_at_1:.4f}, hit@3 {run.hit_at_3:.4f}, hit@10 {run.hit_at_10:.4f}, "
                f"MRR {run.mrr:.4f}, nDCG@10 {run.ndcg_at_10:.4f}, "
                f"p50 {run.latency_p50_ms:.0f} ms) {run.message}"
            )
            if run.status == EvaluationRun.Status.FAILED:
                failed.append(group_id)
        if failed:
            raise CommandError(f"evaluation failed for {', '.join(failed)}")

    def _groups(self, options: dict[str, Any]) -> list[str]:
        groups: list[str] | None = options["group"]
        if groups:
            checked_groups(groups)
            return groups
        with rls.tenant_context(principal_system("eval_golden")):
            found = sorted(
                set(GoldenQuery.objects.filter(enabled=True).values_list("group_id", flat=True))
            )
        if not found:
            raise CommandError("no workspace has golden queries; import some with golden_import")
        return found
