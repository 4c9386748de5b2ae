"""URLs of the portal's search, erasure, Snapshots and Quality pages."""

from django.urls import path

from retrieval.web import erasure, quality, snapshots, views

app_name = "search"
urlpatterns = [
    path("search/", views.search_page, name="page"),
    path("erase/<str:kind>/<int:pk>/", erasure.erase_page, name="erase"),
    path("tombstones/<int:pk>/", erasure.tombstone_page, name="tombstone"),
    path("snapshots/", snapshots.snapshots_page, name="snapshots"),
    path("snapshots/take", snapshots.snapshots_take, name="snapshots-take"),
    path("quality/", quality.quality_page, name="quality"),
    path("quality/weights/<int:weight_set_id>/activate", quality.weights_activate,
         name="quality-activate"),
    path("quality/weights/default", quality.weights_reset, name="quality-reset"),
    path("quality/evaluate", quality.quality_evaluate, name="quality-evaluate"),
    path("quality/words/<int:pk>/<str:decision>", quality.question_word_decide,
         name="quality-word"),
]  # fmt: skip
