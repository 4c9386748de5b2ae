"""App configuration."""

from django.apps import AppConfig


class RetrievalConfig(AppConfig):
    """The retrieval app."""

    name = "retrieval"
    default_auto_field = "django.db.models.BigAutoField"
