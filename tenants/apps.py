"""App configuration."""

from django.apps import AppConfig


class TenantsConfig(AppConfig):
    """The tenants app: connects the audit receivers for sign-in and sign-out, and the
    read-your-writes record of the read replicas."""

    name = "tenants"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from tenants import (
            receivers,  # noqa: F401 - registers the signal receivers
            replicas,
        )

        # While standbys serve reads, each caller's committed writes are recorded so that
        # its next reads see them (read-your-writes).
        replicas.install()
