"""The REST API's usage report, mounted at /api/v1/ by config/api_urls.py."""

from django.urls import path

from .api import UsageCsvView, UsageView

urlpatterns = [
    path("usage", UsageView.as_view(), name="api-usage"),
    path("usage.csv", UsageCsvView.as_view(), name="api-usage-csv"),
]
