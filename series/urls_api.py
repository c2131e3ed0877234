"""Series in the REST API's version 1, mounted at /api/v1/ by config/api_urls.py (created through
POST /reservations with `repeat`)."""

from django.urls import path

from . import api

urlpatterns = [
    path("series/<str:series_id>", api.SeriesView.as_view(), name="api-series"),
    path("series/<str:series_id>/release", api.SeriesReleaseView.as_view(), name="api-series-release"),
]
