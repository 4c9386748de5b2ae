"""URLs of the retrieval REST API (mounted under /api/v1/)."""

from django.urls import path

from retrieval.api import views

urlpatterns = [
    path("search", views.SearchView.as_view(), name="api-search"),
    path("context", views.ContextView.as_view(), name="api-context"),
    path("feedback", views.FeedbackView.as_view(), name="api-feedback"),
    path("sources/<int:pk>/erase", views.SourceEraseView.as_view(), name="api-source-erase"),
    path("episodes/<int:pk>/erase", views.EpisodeEraseView.as_view(), name="api-episode-erase"),
    path("tombstones/<int:pk>", views.TombstoneView.as_view(), name="api-tombstone"),
    path("question-words", views.QuestionWordsView.as_view(), name="api-question-words"),
    path(
        "question-words/<int:pk>/accept",
        views.QuestionWordDecisionView.as_view(decision="accept"),
        name="api-question-word-accept",
    ),
    path(
        "question-words/<int:pk>/dismiss",
        views.QuestionWordDecisionView.as_view(decision="dismiss"),
        name="api-question-word-dismiss",
    ),
    path("snapshots", views.SnapshotListView.as_view(), name="api-snapshots"),
    path("snapshots/<int:pk>", views.SnapshotView.as_view(), name="api-snapshot"),
]
