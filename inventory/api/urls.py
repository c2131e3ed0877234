"""URLs of inventory's endpoints in the REST API's version 1, mounted at /api/v1/ by config/api_urls.py."""

from django.urls import path

from . import fleet, node_history

urlpatterns = [
    path("fleet/import", fleet.FleetImportView.as_view(), name="api-fleet-import"),
    path("nodes/<str:name>/history", node_history.NodeHistoryView.as_view(), name="api-node-history"),
]
