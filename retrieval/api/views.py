"""GET /api/v1/search and POST /api/v1/feedback."""

from __future__ import annotations

from django.db.models import Prefetch
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from curation.models import Claim, Evidence
from retrieval import bootstrap
from retrieval.api.serializers import SearchResultSerializer
from retrieval.models import SearchHit
from retrieval.services import search as search_service
from tenants.api.views import principal_of

ALLOWED = {"q", "k", "as_of", "predicate", "entity", "source", "tier"}


def _int(params: dict[str, str], name: str, low: int, high: int, default: int | None) -> int | None:
    if name not in params:
        return default
    try:
        value = int(params[name])
    except ValueError:
        raise exceptions.ValidationError({name: "must be an integer"}) from None
    if not low <= value <= high:
        raise exceptions.ValidationError({name: f"must be between {low} and {high}"})
    return value


def parse_query(params: dict[str, str]) -> search_service.Query:
    """Validate the query string; every problem is a 400 with a message."""
    unknown = sorted(set(params) - ALLOWED)
    if unknown:
        raise exceptions.ValidationError({"detail": f"unknown parameter(s): {', '.join(unknown)}"})
    text = params.get("q", "").strip()
    if not text:
        raise exceptions.ValidationError({"q": "the query is empty"})
    if "\x00" in text:
        raise exceptions.ValidationError({"q": "the query contains a NUL character"})
    if len(text) > search_service.MAX_QUERY_CHARS:
        raise exceptions.ValidationError(
            {"q": f"the query is longer than {search_service.MAX_QUERY_CHARS} characters"}
        )
    as_of = None
    if "as_of" in params:
        as_of = parse_datetime(params["as_of"])
        if as_of is None or as_of.tzinfo is None:
            raise exceptions.ValidationError({"as_of": "use an ISO 8601 instant with a time zone"})
    return search_service.Query(
        text=text,
        k=_int(params, "k", 1, 100, 10) or 10,
        as_of=as_of,
        predicate=params.get("predicate") or None,
        entity=params.get("entity") or None,
        source=_int(params, "source", 1, 2**62, None),
        tier=_int(params, "tier", 1, 4, None),
    )


def _citations(claim: Claim) -> list[dict[str, object]]:
    return [
        {
            "source": evidence.episode.source.name,
            "episode": evidence.episode.external_id,
            "url": evidence.episode.url,
            "span": [evidence.start, evidence.end] if evidence.start is not None else None,
            "snippet": evidence.snippet[:500],
        }
        for evidence in claim.evidence.all()
    ]


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
        query = parse_query(dict(request.query_params.items()))
        principal = principal_of(request)
        providers = bootstrap.providers()
        result = search_service.search(
            query=query,
            embedder=providers.embedder(),
            weights=providers.weights(),
            now=timezone.now(),
            user_id=principal.user_id,
            reranking=providers.reranking(),
        )
        claims = {
            c.pk: c
            for c in Claim.objects.filter(pk__in=[hit.claim_id for hit in result.hits])
            .select_related("subject", "object_entity")
            .prefetch_related(
                Prefetch("evidence", Evidence.objects.select_related("episode__source"))
            )
        }
        hits = []
        for hit in result.hits:
            claim = claims[hit.claim_id]
            hits.append(
                {
                    "id": hit.hit_id,
                    "claim_id": claim.pk,
                    "fact": claim.fact_text,
                    "subject": claim.subject.canonical_name,
                    "predicate": claim.predicate,
                    "object": claim.object_entity.canonical_name
                    if claim.object_entity
                    else claim.object_literal,
                    "score": round(hit.score, 6),
                    "signals": hit.signals,
                    "rerank": hit.rerank,
                    "status": claim.status,
                    "valid_from": claim.valid_from,
                    "valid_to": claim.valid_to,
                    "citations": _citations(claim),
                }
            )
        response = Response(
            {
                "query_id": str(result.query_id),
                "count": len(hits),
                "stage3": result.stage3.value,
                "degraded": list(result.degraded),
                "hits": hits,
            }
        )
        # Per-step figures beside the middleware's whole-request `app` metric.
        response["Server-Timing"] = ", ".join(
            f"{step};dur={ms:.1f}" for step, ms in result.timings.items()
        )
        return response


class FeedbackInput(serializers.Serializer):
    hit_id = serializers.IntegerField(min_value=1)
    helpful = serializers.BooleanField()


class FeedbackView(APIView):
    """Thumbs up or down on a returned hit (feeds calibration)."""

    @extend_schema(request=FeedbackInput, responses={201: None})
    def post(self, request: Request) -> Response:
        form = FeedbackInput(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            vote = search_service.feedback_record(
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
