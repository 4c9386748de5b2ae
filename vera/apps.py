"""The project's own app: health checks, database role grants, project commands."""

from __future__ import annotations

from django.apps import AppConfig
from django.db.models.signals import post_migrate


class VeraConfig(AppConfig):
    """Registers the post-migrate grant of table privileges to the application role."""

    name = "vera"
    label = "vera"
    verbose_name = "VERA"

    def ready(self) -> None:
        from django.core import checks

        from curation import bootstrap as curation_bootstrap
        from curation.services.outbox import outbox_set_notifier
        from curation.tasks import wake_interactive_lane
        from retrieval import bootstrap as retrieval_bootstrap
        from tenants import replicas

        from . import metrics
        from .checks import renamed_variables
        from .db import grant_app_role
        from .wiring import (
            CurationProviders,
            RetrievalProviders,
            connector_kinds_check,
            embedder_catalog,
        )

        post_migrate.connect(grant_app_role, dispatch_uid="vera.grant_app_role")
        checks.register(renamed_variables)
        connector_kinds_check()  # a kind half-wired fails every process at start
        embedder_catalog()  # so does a companion that is not offered (loads no model)
        curation_bootstrap.install(CurationProviders())
        retrieval_bootstrap.install(RetrievalProviders())
        # Which database serves reads, and each standby's lag, as metrics.
        replicas.observe(metrics.read_served, metrics.replica_checked)
        # A committed review decision wakes the interactive lane's worker at once.
        outbox_set_notifier(wake_interactive_lane)
