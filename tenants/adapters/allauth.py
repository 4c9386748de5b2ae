"""django-allauth adapter: accounts are provisioned or invited, never self-registered."""

from __future__ import annotations

from typing import Any

from allauth.account.adapter import DefaultAccountAdapter
from django import forms
from django.http import HttpRequest

from common.errors import NotFound, PermissionDenied
from tenants.services import invitations
from tenants.services.invitations import SESSION_KEY, pending_token


class InviteOnlyAccountAdapter(DefaultAccountAdapter):  # type: ignore[misc]  # allauth is untyped
    """Sign-up is open only to a browser following a valid invitation, for its address;
    admins, SSO provisioning and invitations create accounts."""

    def is_open_for_signup(self, request: HttpRequest) -> bool:
        return pending_token(request.session) is not None

    def clean_email(self, email: str) -> str:
        email = super().clean_email(email)
        token = pending_token(self.request.session) if self.request is not None else None
        if token is not None:
            try:
                invitations.invitation_check(token, email=email)
            except (NotFound, PermissionDenied) as error:
                raise forms.ValidationError(str(error)) from None
        return email

    def save_user(self, request: HttpRequest, user: Any, form: Any, commit: bool = True) -> Any:
        """The new account, and the invitation it was opened for accepted with it. The
        link verifies the one address it was sent to (the sign-up form only takes that
        address): allauth records it verified."""
        saved = super().save_user(request, user, form, commit=commit)
        token = request.session.pop(SESSION_KEY, None)
        if commit and token:
            invitations.invitation_accept(token=token, user_id=saved.pk, signed_up_by_link=True)
            self.stash_verified_email(request, saved.email)
        return saved
