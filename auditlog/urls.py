"""The audit export's URL in the REST API's version 1, mounted at /api/v1/ by config/api_urls.py."""

from django.urls import path

from auditlog.api import AuditView

urlpatterns = [
    path("audit", AuditView.as_view(), name="api-audit"),
]
