"""Browser URLs: pools and nodes with their bookings, preview, booking and reservations."""

from django.urls import path

from . import views
from .views.reservations import rebook

urlpatterns = [
    path("", views.pools, name="pools"),
    path("pools/<slug:slug>/", views.pool_detail, name="pool-detail"),
    # The pool page's settings sections, registered by the pool's rules (views.pool_sections).
    path("pools/<slug:slug>/shares/", views.pool_section, {"name": "shares"}, name="pool-share"),
    path("pools/<slug:slug>/policy/", views.pool_section, {"name": "policy"}, name="pool-policy"),
    # Maintenance windows from the pool and node pages: the maintenance app's (maintenance/urls.py).
    path("pools/<slug:slug>/slurm/", views.pool_section, {"name": "slurm"}, name="pool-slurm"),
    path("nodes/<str:name>/", views.node_detail, name="node-detail"),
    # Drain from the node page: the maintenance app's (maintenance/urls.py, included ahead of these).
    path("nodes/<str:name>/history/", views.node_history_page, name="node-history"),
    path("nodes/<str:name>/actions/<slug:action>/", views.node_action, name="node-action"),
    path("nodes/<str:name>/row/<slug:action>/", views.node_row_action, name="node-row-action"),
    path("preview/", views.preview, name="preview"),
    path("preview/selector/", views.selector_check, name="selector-check"),
    path("book/", views.book, name="book"),
    path("reservations/", views.reservations, name="reservations"),
    path("reservations/<int:pk>/", views.reservation_detail, name="reservation-detail"),
    path("reservations/<int:pk>/release/", views.release, name="reservation-release"),
    path("reservations/<int:pk>/rebook/", rebook, name="reservation-rebook"),
]
