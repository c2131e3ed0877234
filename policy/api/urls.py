"""The pool rules' API URLs, mounted at /api/v1/ by config/api_urls.py."""

from django.urls import path

from . import approvals, pool_policy, quota, reclaim, shares

urlpatterns = [
    path(
        "reservations/<str:reservation_id>/approve",
        approvals.ApproveView.as_view(),
        name="api-reservation-approve",
    ),
    path("reservations/<str:reservation_id>/deny", approvals.DenyView.as_view(), name="api-reservation-deny"),
    path(
        "reservations/<str:reservation_id>/reclaim",
        reclaim.ReclaimView.as_view(),
        name="api-reservation-reclaim",
    ),
    path("pools/<str:pool>/policy", pool_policy.PolicyView.as_view(), name="api-pool-policy"),
    path("pools/<str:pool>/shares", shares.SharesView.as_view(), name="api-pool-shares"),
    path("pools/<str:pool>/shares/<str:tenant>", shares.ShareView.as_view(), name="api-pool-share"),
    path("tenants/<str:slug>/quota", quota.QuotaView.as_view(), name="api-tenant-quota"),
]
