"""The maintenance windows' REST API, mounted at /api/v1/ by config/api_urls.py."""

from django.urls import path

from . import api

urlpatterns = [
    path("maintenance", api.WindowsView.as_view(), name="api-maintenance"),
    path("maintenance/<str:window_id>", api.WindowView.as_view(), name="api-maintenance-window"),
]
