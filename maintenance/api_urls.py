"""The maintenance app's REST API, mounted at /api/v1/ by config/api_urls.py: maintenance windows, and
the node actions that take a node out of service (cordon, uncordon, maintenance mode, drain)."""

from django.urls import path

from . import api, node_api

urlpatterns = [
    path("maintenance", api.WindowsView.as_view(), name="api-maintenance"),
    path("maintenance/<str:window_id>", api.WindowView.as_view(), name="api-maintenance-window"),
    path("nodes/<str:name>/cordon", node_api.CordonView.as_view(), name="api-node-cordon"),
    path("nodes/<str:name>/uncordon", node_api.UncordonView.as_view(), name="api-node-uncordon"),
    path("nodes/<str:name>/drain", node_api.DrainView.as_view(), name="api-node-drain"),
    path("nodes/<str:name>/maintenance", node_api.MaintenanceView.as_view(), name="api-node-maintenance"),
]
