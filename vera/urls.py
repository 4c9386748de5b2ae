"""URL configuration."""

from __future__ import annotations

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from tenants.web.invitations import invitation

from . import views

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
    path("metrics", views.metrics, name="metrics"),
    path("", views.home, name="home"),
    path("accounts/", include("allauth.urls")),
    path("keys/", include("tenants.web.urls")),
    path("scopes/", include("tenants.web.scope_urls")),
    path("invitations/<str:token>", invitation, name="invitation"),
    path("", include("curation.web.urls")),
    path("", include("retrieval.web.urls")),
    path("admin/", admin.site.urls),
    path("api/v1/schema", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/v1/", include("tenants.api.urls")),
    path("api/v1/", include("curation.api.urls")),
    path("api/v1/", include("retrieval.api.urls")),
    path("oidc/", include("mozilla_django_oidc.urls")),
]
handler404 = "vera.api.not_found"
