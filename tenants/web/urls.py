"""URLs of the key management pages (mounted under /keys/)."""

from django.urls import path

from tenants.web import views

app_name = "keys"
urlpatterns = [
    path("", views.key_list, name="list"),
    path("issue", views.key_issue, name="issue"),
    path("<int:key_id>/revoke", views.key_revoke, name="revoke"),
    path("<int:key_id>/rotate", views.key_rotate, name="rotate"),
]
