"""django-allauth adapter: accounts are provisioned, not self-registered."""

from __future__ import annotations

from allauth.account.adapter import DefaultAccountAdapter
from django.http import HttpRequest


class InviteOnlyAccountAdapter(DefaultAccountAdapter):  # type: ignore[misc]  # allauth is untyped
    """Closes public sign-up; admins and SSO provisioning create accounts."""

    def is_open_for_signup(self, request: HttpRequest) -> bool:
        return False
