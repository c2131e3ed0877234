"""The audit export's URL in the REST API's version 1, mounted at /api/v1/ by config/api_urls.py."""

from django.urls import path

from auditlog.api import AuditCsvView, AuditView

urlpatterns = [
    path("audit", AuditView.as_view(), name="api-audit"),
    path("audit.csv", AuditCsvView.as_view(), name="api-audit-csv"),
]
