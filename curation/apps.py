"""App configuration."""

from django.apps import AppConfig


class CurationConfig(AppConfig):
    """The curation app."""

    name = "curation"
    default_auto_field = "django.db.models.BigAutoField"
