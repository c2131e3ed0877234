"""The token endpoints of the REST API's version 1, mounted at /api/v1/ by config/api_urls.py."""

from django.urls import path

from identity import token_api

urlpatterns = [
    path("token/revoke", token_api.RevokeOwnTokenView.as_view(), name="api-token-revoke"),
    path("nodes/<str:name>/token", token_api.NodeTokenView.as_view(), name="api-node-token"),
]
