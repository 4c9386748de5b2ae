"""Weight sets: storing a calibrated set, and switching which one ranks a workspace.

A workspace ranks with its one active set, or with the built-in default (version 0)
when none is active. Activation is the only way to change that; it is audited and
recorded as a `WeightActivation`, and rolling back is activating an earlier set.

Activation compares the golden-set evaluations of the set and of what ranks now: a set
that scored lower, or was never evaluated while the workspace has a golden set, is
activated only with `confirm=True` (the portal asks; the nightly job never confirms).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from django.db import connection, transaction
from django.db.models import Max
from django.utils import timezone

from common.errors import PermissionDenied
from retrieval.domain.ranking import DEFAULT_UNDERSTOOD, SIGNALS, Weights
from retrieval.models import EvaluationRun, GoldenQuery, WeightActivation, WeightSet
from tenants.domain.access import Principal
from tenants.domain.scopes import Role
from tenants.services.audit import audit_record


class NeedsConfirmation(Exception):
    """Activation would rank worse on the golden set (or unmeasured); `str()` says why."""


@dataclass(frozen=True)
class Activation:
    """What an activation did; `message` is shown to the admin verbatim."""

    weight_set: WeightSet
    previous: WeightSet | None
    message: str


def weight_set_create(
    *,
    group_id: str,
    weights: Weights,
    origin: str,
    helpful: int = 0,
    unhelpful: int = 0,
    separations: Mapping[str, float] | None = None,
    understood: float = DEFAULT_UNDERSTOOD,
) -> WeightSet:
    """Store a new (inactive) set as the workspace's next version."""
    with transaction.atomic():
        # The per-group version is taken under a lock on the group's sets, so two
        # calibrations cannot both be "version 3".
        _lock_group(group_id)
        latest = WeightSet.objects.filter(group_id=group_id).aggregate(v=Max("version"))["v"]
        return WeightSet.objects.create(
            group_id=group_id,
            version=(latest or 0) + 1,
            origin=origin,
            helpful=helpful,
            unhelpful=unhelpful,
            separations=dict(separations or {}),
            understood=understood,
            **weights.as_dict(),
        )


def weights_of(weight_set: WeightSet) -> Weights:
    """The domain value of a stored set."""
    return Weights.from_mapping({name: getattr(weight_set, name) for name in SIGNALS})


def _lock_group(group_id: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [f"vera.weightset:{group_id}"])


def latest_evaluation(group_id: str, weight_set: WeightSet | None) -> EvaluationRun | None:
    """The newest finished golden-set run that ranked with this set (None: the default)."""
    runs = EvaluationRun.objects.filter(group_id=group_id, finished_at__isnull=False)
    runs = runs.exclude(status=EvaluationRun.Status.EMPTY)
    if weight_set is None:
        runs = runs.filter(weight_set__isnull=True)
    else:
        runs = runs.filter(weight_set=weight_set)
    return runs.order_by("-finished_at", "-pk").first()


def activation_doubt(weight_set: WeightSet, current: WeightSet | None) -> str:
    """Why activating `weight_set` over `current` needs a confirmation ("" when it does not)."""
    if not GoldenQuery.objects.filter(group_id=weight_set.group_id, enabled=True).exists():
        return ""
    mine = latest_evaluation(weight_set.group_id, weight_set)
    if mine is None:
        return (
            f"Weights v{weight_set.version} have not been evaluated on the golden set; "
            "evaluate them first, or confirm to activate unmeasured."
        )
    theirs = latest_evaluation(weight_set.group_id, current)
    if theirs is not None and mine.ndcg_at_10 < theirs.ndcg_at_10:
        now_name = f"v{current.version}" if current else "the default (v0)"
        return (
            f"Weights v{weight_set.version} scored nDCG@10 {mine.ndcg_at_10:.4f} on the golden "
            f"set, below {now_name} at {theirs.ndcg_at_10:.4f}; confirm to activate anyway."
        )
    return ""


@transaction.atomic
def weight_set_activate(
    *, actor: Principal, weight_set_id: int, reason: str = "", confirm: bool = False
) -> Activation:
    """Make one set the workspace's active set (workspace admin, audited)."""
    chosen = WeightSet.objects.select_for_update().get(pk=weight_set_id)
    if not actor.can(Role.ADMIN, chosen.group_id):
        raise PermissionDenied("activating weights needs the admin role in this workspace")
    _lock_group(chosen.group_id)
    current = WeightSet.objects.filter(group_id=chosen.group_id, active=True).first()
    if current is not None and current.pk == chosen.pk:
        return Activation(chosen, current, f"Weights v{chosen.version} are already active.")
    doubt = activation_doubt(chosen, current)
    if doubt and not confirm:
        raise NeedsConfirmation(doubt)
    now = timezone.now()
    if current is not None:
        WeightSet.objects.filter(pk=current.pk).update(active=False)
    WeightSet.objects.filter(pk=chosen.pk).update(
        active=True, activated_at=now, activated_by=actor.label
    )
    chosen.refresh_from_db()
    WeightActivation.objects.create(
        group_id=chosen.group_id,
        weight_set=chosen,
        previous=current,
        actor_label=actor.label,
        reason=reason,
    )
    audit_record(
        actor=actor,
        group_id=chosen.group_id,
        action="weights.activate",
        target=("weightset", chosen.pk),
        data={
            "version": chosen.version,
            "previous_version": current.version if current else 0,
            "weights": weights_of(chosen).as_dict(),
            "reason": reason,
            "confirmed_doubt": doubt,
        },
    )
    was = f"v{current.version}" if current else "the default (v0)"
    return Activation(chosen, current, f"Weights v{chosen.version} are active (were {was}).")


@transaction.atomic
def weights_reset_default(*, actor: Principal, group_id: str, reason: str = "") -> str:
    """Deactivate the workspace's set: it ranks with the built-in default again (audited)."""
    if not actor.can(Role.ADMIN, group_id):
        raise PermissionDenied("changing weights needs the admin role in this workspace")
    _lock_group(group_id)
    current = WeightSet.objects.filter(group_id=group_id, active=True).first()
    if current is None:
        return "The built-in default weights are already in use."
    WeightSet.objects.filter(pk=current.pk).update(active=False)
    WeightActivation.objects.create(
        group_id=group_id, weight_set=None, previous=current, actor_label=actor.label,
        reason=reason,
    )  # fmt: skip
    audit_record(
        actor=actor,
        group_id=group_id,
        action="weights.reset_default",
        target=("weightset", current.pk),
        data={"previous_version": current.version, "reason": reason},
    )
    return f"The built-in default weights (v0) are in use (were v{current.version})."
