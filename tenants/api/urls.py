"""URLs of the tenants REST API (mounted under /api/v1/)."""

from django.urls import path

from tenants.api import views

urlpatterns = [
    path("me", views.MeView.as_view(), name="api-me"),
    path("keys", views.ApiKeyListView.as_view(), name="api-keys"),
    path("keys/<int:key_id>/rotate", views.ApiKeyRotateView.as_view(), name="api-key-rotate"),
    path("keys/<int:key_id>/revoke", views.ApiKeyRevokeView.as_view(), name="api-key-revoke"),
    path("audit-events", views.AuditEventListView.as_view(), name="api-audit-events"),
]
