"""The audit's page, /audit/ (the export's API path is auditlog/urls.py)."""

from django.urls import path

from auditlog.views import audit

urlpatterns = [
    path("audit/", audit, name="audit"),
]
