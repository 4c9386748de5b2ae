"""VERA: the Django project (settings, urls, Celery app, composition root)."""

from .celery import app as celery_app

__all__ = ["celery_app"]
