"""App configuration."""

from django.apps import AppConfig


class TenantsConfig(AppConfig):
    """The tenants app: connects the audit receivers for sign-in and sign-out."""

    name = "tenants"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from tenants import receivers  # noqa: F401 - registers the signal receivers
