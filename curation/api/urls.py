"""URLs of the curation REST API (mounted under /api/v1/)."""

from django.urls import path

from curation.api import views

urlpatterns = [
    path("sources", views.SourceListView.as_view(), name="api-sources"),
    path("episodes", views.EpisodeListView.as_view(), name="api-episodes"),
    path("claims", views.ClaimListView.as_view(), name="api-claims"),
    path("entities/<int:entity_id>", views.EntityDetailView.as_view(), name="api-entity"),
    path(
        "entities/<int:entity_id>/related",
        views.EntityRelatedView.as_view(),
        name="api-entity-related",
    ),
    path(
        "claims/<int:claim_id>/history", views.ClaimHistoryView.as_view(), name="api-claim-history"
    ),
    path("claims/<int:pk>/retract", views.ClaimRetractView.as_view(), name="api-claim-retract"),
    path(
        "claims/<int:pk>/reinstate", views.ClaimReinstateView.as_view(), name="api-claim-reinstate"
    ),
    path(
        "episodes/<int:pk>/retract", views.EpisodeRetractView.as_view(), name="api-episode-retract"
    ),
    path("sources/<int:pk>/retract", views.SourceRetractView.as_view(), name="api-source-retract"),
    path("sources/<int:pk>/run", views.SourceRunView.as_view(), name="api-source-run"),
    path(
        "sources/<int:pk>/reprocess",
        views.SourceReprocessView.as_view(),
        name="api-source-reprocess",
    ),
    path("reprocessings/<int:pk>", views.ReprocessingView.as_view(), name="api-reprocessing"),
    path("proposals", views.ProposalView.as_view(), name="api-proposals"),
    path("ontology", views.OntologyView.as_view(), name="api-ontology"),
    path(
        "ontology/<str:name>", views.OntologyPredicateView.as_view(), name="api-ontology-predicate"
    ),
]
