"""The bridge's endpoints in the REST API's version 1, mounted at /api/v1/ by config/api_urls.py."""

from django.urls import path

from . import api

urlpatterns = [
    path("pools/<str:pool>/slurm", api.BridgeView.as_view(), name="api-pool-slurm"),
    path(
        "pools/<str:pool>/slurm/accounts/<str:tenant>",
        api.AccountView.as_view(),
        name="api-pool-slurm-account",
    ),
]
