"""URLs of the REST API's version 1, mounted at /api/v1/ by config/api_urls.py."""

from django.urls import path

from . import earliest_view, nodes, views

urlpatterns = [
    path("reservations", views.ReservationsView.as_view(), name="api-reservations"),
    # GET is capacity's; other apps add methods (policy: PATCH keepWhenIdle), capacity.api.views.register_reservation_methods.
    path(
        "reservations/<str:reservation_id>",
        views.with_methods(views.ReservationView).as_view(),
        name="api-reservation",
    ),
    path(
        "reservations/<str:reservation_id>/release",
        views.ReleaseView.as_view(),
        name="api-reservation-release",
    ),
    path("capacity/preview", views.PreviewView.as_view(), name="api-capacity-preview"),
    path("capacity/earliest", earliest_view.EarliestView.as_view(), name="api-capacity-earliest"),
    path("pools", views.PoolsView.as_view(), name="api-pools"),
    path("pools/<str:slug>", views.PoolView.as_view(), name="api-pool"),
    path("nodes", nodes.NodesView.as_view(), name="api-nodes"),
    path("nodes/<str:name>", nodes.NodeView.as_view(), name="api-node"),
    # Cordon, uncordon, drain and maintenance mode: the maintenance app's (maintenance/api_urls.py).
    path("nodes/<str:name>/taints", nodes.TaintsView.as_view(), name="api-node-taints"),
    path("nodes/<str:name>/taints/<path:key>", nodes.TaintView.as_view(), name="api-node-taint"),
    path("nodes/<str:name>/dedicate", nodes.DedicateView.as_view(), name="api-node-dedicate"),
    path("nodes/<str:name>/labels", nodes.LabelsView.as_view(), name="api-node-labels"),
    path("nodes/<str:name>/labels/<path:key>", nodes.LabelView.as_view(), name="api-node-label"),
    path("nodes/<str:name>/topology", nodes.TopologyView.as_view(), name="api-node-topology"),
]
