"""The pool rules' API URLs, mounted at /api/v1/ by config/api_urls.py."""

from django.urls import path

from . import approvals

urlpatterns = [
    path(
        "reservations/<str:reservation_id>/approve",
        approvals.ApproveView.as_view(),
        name="api-reservation-approve",
    ),
    path("reservations/<str:reservation_id>/deny", approvals.DenyView.as_view(), name="api-reservation-deny"),
]
