"""URLs of the review portal."""

from django.urls import path

from curation.web import views

app_name = "review"
urlpatterns = [
    path("review/", views.review_queue, name="queue"),
    path("review/claims/<int:claim_id>/<str:action>", views.claim_decide, name="claim"),
    path("review/proposals/<int:claim_id>/<str:action>", views.proposal_decide, name="proposal"),
    path("review/rechecks/<int:claim_id>/<str:action>", views.recheck_decide, name="recheck"),
    path("review/merges/<int:candidate_id>/<str:action>", views.merge_decide, name="merge"),
    path("review/bulk", views.bulk_decide, name="bulk"),
    path("review/documents/<int:episode_id>/<str:action>", views.document_decide, name="document"),
    path("review/episodes/<int:episode_id>/raw", views.episode_raw, name="raw"),
    path("claims/<int:claim_id>/", views.claim_detail, name="claim-detail"),
    path("<str:kind>/<int:pk>/retract", views.retract, name="retract"),
    path("entities/<int:entity_id>/", views.entity_detail, name="entity"),
]
