"""URLs of the REST API's version 1, mounted at /api/v1/ by config/api_urls.py."""

from django.urls import path

from . import (
    agents,
    devices,
    drain,
    earliest_view,
    maintenance,
    node_changelog,
    nodes,
    series,
    tokens,
    views,
)

urlpatterns = [
    path("reservations", views.ReservationsView.as_view(), name="api-reservations"),
    path("reservations/<str:reservation_id>", views.ReservationView.as_view(), name="api-reservation"),
    path(
        "reservations/<str:reservation_id>/release",
        views.ReleaseView.as_view(),
        name="api-reservation-release",
    ),
    path(
        "reservations/<str:reservation_id>/reclaim",
        views.ReclaimView.as_view(),
        name="api-reservation-reclaim",
    ),
    path("series/<str:series_id>", series.SeriesView.as_view(), name="api-series"),
    path("series/<str:series_id>/release", series.SeriesReleaseView.as_view(), name="api-series-release"),
    path("token/revoke", tokens.RevokeOwnTokenView.as_view(), name="api-token-revoke"),
    path("capacity/preview", views.PreviewView.as_view(), name="api-capacity-preview"),
    path("capacity/earliest", earliest_view.EarliestView.as_view(), name="api-capacity-earliest"),
    path("pools", views.PoolsView.as_view(), name="api-pools"),
    path("pools/<str:slug>", views.PoolView.as_view(), name="api-pool"),
    path("maintenance", maintenance.WindowsView.as_view(), name="api-maintenance"),
    path("maintenance/<str:window_id>", maintenance.WindowView.as_view(), name="api-maintenance-window"),
    path("nodes", nodes.NodesView.as_view(), name="api-nodes"),
    path("nodes/<str:name>", nodes.NodeView.as_view(), name="api-node"),
    path("nodes/<str:name>/cordon", nodes.CordonView.as_view(), name="api-node-cordon"),
    path("nodes/<str:name>/uncordon", nodes.UncordonView.as_view(), name="api-node-uncordon"),
    path("nodes/<str:name>/drain", drain.DrainView.as_view(), name="api-node-drain"),
    path("nodes/<str:name>/history", node_changelog.NodeHistoryView.as_view(), name="api-node-history"),
    path("nodes/<str:name>/maintenance", nodes.MaintenanceView.as_view(), name="api-node-maintenance"),
    path("nodes/<str:name>/taints", nodes.TaintsView.as_view(), name="api-node-taints"),
    path("nodes/<str:name>/taints/<path:key>", nodes.TaintView.as_view(), name="api-node-taint"),
    path("nodes/<str:name>/dedicate", nodes.DedicateView.as_view(), name="api-node-dedicate"),
    path("nodes/<str:name>/labels", nodes.LabelsView.as_view(), name="api-node-labels"),
    path("nodes/<str:name>/labels/<path:key>", nodes.LabelView.as_view(), name="api-node-label"),
    path("nodes/<str:name>/report", nodes.ReportView.as_view(), name="api-node-report"),
    path(
        "nodes/<str:name>/devices/accept", devices.AcceptDevicesView.as_view(), name="api-node-accept-devices"
    ),
    path("nodes/<str:name>/topology", nodes.TopologyView.as_view(), name="api-node-topology"),
    path("nodes/<str:name>/assignments", agents.AssignmentsView.as_view(), name="api-node-assignments"),
    path("nodes/<str:name>/token", agents.NodeTokenView.as_view(), name="api-node-token"),
]
