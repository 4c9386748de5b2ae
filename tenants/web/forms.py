"""Forms of the key management pages."""

from __future__ import annotations

import datetime as dt
from typing import Any, cast

from django import forms
from django.contrib.auth import get_user_model
from django.db.models import QuerySet
from django.utils import timezone

from tenants.domain.access import Principal
from tenants.domain.scopes import Role
from tenants.models import Membership, Scope


class KeyIssueForm(forms.Form):
    """Issue a key for a member of a workspace the signed-in admin administers."""

    scope = forms.ModelChoiceField(
        queryset=Scope.objects.none(), to_field_name="group_id", label="Workspace"
    )
    owner = forms.ModelChoiceField(queryset=get_user_model().objects.none())
    name = forms.CharField(max_length=100)
    role_ceiling = forms.TypedChoiceField(coerce=lambda v: Role(int(v)), choices=())
    expires_in_days = forms.IntegerField(min_value=1, max_value=3650, required=False)

    def __init__(
        self, *args: Any, principal: Principal, scopes: QuerySet[Scope], **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        # self.fields holds this form's copies of the fields declared above, which the
        # stubs type as plain Field.
        scope = cast("forms.ModelChoiceField[Scope]", self.fields["scope"])
        owner = cast("forms.ModelChoiceField[Any]", self.fields["owner"])
        role_ceiling = cast("forms.TypedChoiceField", self.fields["role_ceiling"])
        scope.queryset = scopes
        members = Membership.objects.filter(scope__in=scopes).values("user_id")
        owner.queryset = get_user_model().objects.filter(pk__in=members).order_by("username")
        top = max((r for r in principal.roles.values()), default=Role.VIEWER)
        role_ceiling.choices = [(r.value, r.name.title()) for r in Role if r <= top]

    def expires_at(self) -> dt.datetime | None:
        days = self.cleaned_data.get("expires_in_days")
        return timezone.now() + dt.timedelta(days=days) if days else None
