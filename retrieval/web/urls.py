"""URL of the portal search page."""

from django.urls import path

from retrieval.web import views

app_name = "search"
urlpatterns = [path("search/", views.search_page, name="page")]
