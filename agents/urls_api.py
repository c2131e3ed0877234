"""The node agent's endpoints of the REST API's version 1, mounted at /api/v1/ by config/api_urls.py."""

from django.urls import path

from . import accept, api, report

urlpatterns = [
    path("nodes/<str:name>/report", report.ReportView.as_view(), name="api-node-report"),
    path("nodes/<str:name>/assignments", api.AssignmentsView.as_view(), name="api-node-assignments"),
    path(
        "nodes/<str:name>/devices/accept", accept.AcceptDevicesView.as_view(), name="api-node-accept-devices"
    ),
]
