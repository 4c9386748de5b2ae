"""GET /api/v1/search and POST /api/v1/feedback."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from retrieval import bootstrap, selectors
from retrieval.api.serializers import SearchResultSerializer
from retrieval.domain.query import InvalidQuery, Query, parse_query
from retrieval.models import SearchHit
from retrieval.services.feedback import feedback_record
from retrieval.services.search import server_timing
from tenants.api.views import principal_of


def _query(request: Request) -> Query:
    """The parsed query string; a bad one is a 400 with a message per parameter."""
    try:
        return parse_query(request.query_params.dict())
    except InvalidQuery as error:
        raise exceptions.ValidationError(error.errors) from None


class SearchView(APIView):
    """Ranked, cited, time-aware search over the caller's knowledge."""

    @extend_schema(
        parameters=[
            OpenApiParameter("q", str, required=True, description="the query, 1..2,000 characters"),
            OpenApiParameter("k", int, description="hits to return, 1..100 (default 10)"),
            OpenApiParameter("as_of", str, description="ISO 8601 instant: facts valid then"),
            OpenApiParameter("predicate", str, description="only this PREDICATE"),
            OpenApiParameter("entity", str, description="only claims about this subject"),
            OpenApiParameter("source", int, description="only claims from this source id"),
            OpenApiParameter("tier", int, description="only this trust tier, 1..4"),
        ],
        responses={200: SearchResultSerializer},
    )
    def get(self, request: Request) -> Response:
        result = bootstrap.search()(
            query=_query(request), now=timezone.now(), user_id=principal_of(request).user_id
        )
        cited = selectors.search_result_cited(result=result)
        response = Response(SearchResultSerializer(cited).data)
        # Per-step figures beside the middleware's whole-request `app` metric.
        response["Server-Timing"] = server_timing(result.timings)
        return response


class FeedbackInput(serializers.Serializer[None]):
    hit_id = serializers.IntegerField(min_value=1)
    helpful = serializers.BooleanField()


class FeedbackView(APIView):
    """Thumbs up or down on a returned hit (feeds calibration)."""

    @extend_schema(request=FeedbackInput, responses={201: None})
    def post(self, request: Request) -> Response:
        form = FeedbackInput(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            vote = feedback_record(
                hit_id=form.validated_data["hit_id"],
                helpful=form.validated_data["helpful"],
                user_id=principal_of(request).user_id,
            )
        except SearchHit.DoesNotExist:
            raise exceptions.NotFound("No such hit.") from None
        return Response(
            {"hit_id": vote.hit_id, "claim_id": vote.claim_id, "helpful": vote.helpful},
            status=status.HTTP_201_CREATED,
        )
