"""REST endpoints: sources (admins), episodes, claims with filters, a claim's history."""

from __future__ import annotations

import datetime as dt

from django.db.models import QuerySet
from django.utils.dateparse import parse_datetime
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import exceptions, generics, status
from rest_framework.request import Request
from rest_framework.response import Response

from curation import selectors
from curation.api.serializers import (
    ClaimSerializer,
    EpisodeSerializer,
    SourceCreateSerializer,
    SourceSerializer,
)
from curation.domain.tiers import ClaimStatus
from curation.models import Claim, Episode, Source
from curation.services.sources import source_create
from tenants.api.views import principal_of
from tenants.domain.scopes import Role
from tenants.services.scopes import PermissionDenied

CLAIM_FILTERS = ["status", "predicate", "subject", "source", "tier", "as_of"]


class SourceListView(generics.ListAPIView):
    """Sources of the scopes the caller administers; POST creates one."""

    serializer_class = SourceSerializer

    def get_queryset(self) -> QuerySet[Source]:
        administered = principal_of(self.request).groups_at_least(Role.ADMIN)
        return Source.objects.filter(group_id__in=administered).order_by("name")

    @extend_schema(request=SourceCreateSerializer, responses={201: SourceSerializer})
    def post(self, request: Request) -> Response:
        form = SourceCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            source = source_create(actor=principal_of(request), **form.validated_data)
        except PermissionDenied as error:
            raise exceptions.PermissionDenied(str(error)) from None
        except ValueError as error:
            raise exceptions.ValidationError({"detail": str(error)}) from None
        return Response(SourceSerializer(source).data, status=status.HTTP_201_CREATED)


class EpisodeListView(generics.ListAPIView):
    """Episodes (fetched artifacts), newest first; filter by source and status."""

    serializer_class = EpisodeSerializer

    def get_queryset(self) -> QuerySet[Episode]:
        queryset = Episode.objects.order_by("-fetched_at", "-pk")
        params = self.request.query_params
        if "source" in params:
            queryset = queryset.filter(source_id=_int(params["source"], "source"))
        if "status" in params:
            queryset = queryset.filter(status=params["status"])
        return queryset


def _int(value: str, name: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise exceptions.ValidationError({name: "must be an integer"}) from None


def _as_of(value: str) -> dt.datetime:
    parsed = parse_datetime(value)
    if parsed is None or parsed.tzinfo is None:
        raise exceptions.ValidationError({"as_of": "use an ISO 8601 instant with a time zone"})
    return parsed


class ClaimListView(generics.ListAPIView):
    """Claims, published now by default; `as_of` returns what was valid then."""

    serializer_class = ClaimSerializer

    @extend_schema(parameters=[OpenApiParameter(name, str) for name in CLAIM_FILTERS])
    def get(self, request: Request, *args: object, **kwargs: object) -> Response:
        unknown = set(request.query_params) - {*CLAIM_FILTERS, "limit", "offset"}
        if unknown:
            raise exceptions.ValidationError(
                {"detail": f"unknown filter(s): {', '.join(sorted(unknown))}"}
            )
        return super().get(request, *args, **kwargs)

    def get_queryset(self) -> QuerySet[Claim]:
        params = self.request.query_params
        if "status" in params:
            if params["status"] not in {s.value for s in ClaimStatus}:
                raise exceptions.ValidationError({"status": "unknown status"})
            queryset = Claim.objects.filter(status=params["status"])
        else:
            queryset = selectors.claims_valid(
                as_of=_as_of(params["as_of"]) if "as_of" in params else None
            )
        if "predicate" in params:
            queryset = queryset.filter(predicate=params["predicate"])
        if "subject" in params:
            queryset = queryset.filter(subject__canonical_name__iexact=params["subject"])
        if "source" in params:
            queryset = queryset.filter(source_id=_int(params["source"], "source"))
        if "tier" in params:
            queryset = queryset.filter(tier=_int(params["tier"], "tier"))
        return (
            queryset.select_related("subject", "object_entity")
            .prefetch_related("evidence__episode__source")
            .order_by("-valid_from", "-pk")
        )


class ClaimHistoryView(generics.GenericAPIView):
    """Every value the claim's subject and predicate have had, oldest first."""

    serializer_class = ClaimSerializer

    def get(self, request: Request, claim_id: int) -> Response:
        history = selectors.claim_history(claim_id=claim_id)
        if not history:
            raise exceptions.NotFound("No such claim.")
        return Response(ClaimSerializer(history, many=True).data)
