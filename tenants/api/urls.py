"""URLs of the tenants REST API (mounted under /api/v1/)."""

from django.urls import path

from tenants.api import views

urlpatterns = [
    path("me", views.MeView.as_view(), name="api-me"),
    path("keys", views.ApiKeyListView.as_view(), name="api-keys"),
    path("keys/<int:key_id>/rotate", views.ApiKeyRotateView.as_view(), name="api-key-rotate"),
    path("keys/<int:key_id>/revoke", views.ApiKeyRevokeView.as_view(), name="api-key-revoke"),
    path("scopes", views.ScopeListView.as_view(), name="api-scopes"),
    path("scopes/<str:group_id>", views.ScopeView.as_view(), name="api-scope"),
    path("scopes/<str:group_id>/members", views.MemberListView.as_view(), name="api-members"),
    path(
        "scopes/<str:group_id>/members/<int:user_id>",
        views.MemberView.as_view(),
        name="api-member",
    ),
    path(
        "scopes/<str:group_id>/members/<int:user_id>/deactivate",
        views.MemberDeactivateView.as_view(),
        name="api-member-deactivate",
    ),
    path(
        "scopes/<str:group_id>/invitations",
        views.InvitationListView.as_view(),
        name="api-invitations",
    ),
    path(
        "scopes/<str:group_id>/invitations/<int:invitation_id>",
        views.InvitationView.as_view(),
        name="api-invitation",
    ),
    path("audit-events", views.AuditEventListView.as_view(), name="api-audit-events"),
]
