"""Browser URLs: maintenance windows scheduled and cancelled from the pool and node pages, a node drained
from its page (config/urls.py includes these ahead of capacity's node actions)."""

from django.urls import path

from . import pages

urlpatterns = [
    path("pools/<slug:slug>/maintenance/", pages.pool_windows, name="pool-windows"),
    path(
        "pools/<slug:slug>/maintenance/<int:pk>/delete/", pages.pool_window_delete, name="pool-window-delete"
    ),
    path("nodes/<str:name>/maintenance/", pages.node_windows, name="node-windows"),
    path(
        "nodes/<str:name>/maintenance/<int:pk>/delete/", pages.node_window_delete, name="node-window-delete"
    ),
    path("nodes/<str:name>/actions/drain/", pages.node_drain, name="node-drain"),
]
