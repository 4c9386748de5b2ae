"""App configuration."""

from django.apps import AppConfig


class TenantsConfig(AppConfig):
    """The tenants app."""

    name = "tenants"
    default_auto_field = "django.db.models.BigAutoField"
