"""URLs of the scopes and members pages (mounted under /scopes/)."""

from django.urls import path

from tenants.web import scopes

app_name = "scopes"
urlpatterns = [
    path("", scopes.scope_list, name="list"),
    path("organisations/", scopes.organisations, name="organisations"),
    path("<str:group_id>/", scopes.scope_page, name="page"),
    path("<str:group_id>/open", scopes.scope_open, name="open"),
    path("<str:group_id>/change", scopes.scope_change, name="change"),
    path("<str:group_id>/members", scopes.member_add, name="member-add"),
    path("<str:group_id>/members/<int:user_id>", scopes.member_change, name="member"),
    path("<str:group_id>/invitations", scopes.invitation_send, name="invite"),
    path(
        "<str:group_id>/invitations/<int:invitation_id>/withdraw",
        scopes.invitation_withdraw,
        name="withdraw",
    ),
]
