"""Webhooks' endpoints in the REST API's version 1, mounted at /api/v1/ by config/api_urls.py."""

from django.urls import path

from . import api

urlpatterns = [
    path("calendar", api.CalendarView.as_view(), name="api-calendar"),
    path("webhooks", api.WebhooksView.as_view(), name="api-webhooks"),
    path("webhooks/<str:webhook_id>", api.WebhookView.as_view(), name="api-webhook"),
    path(
        "webhooks/<str:webhook_id>/rotate-secret", api.RotateSecretView.as_view(), name="api-webhook-rotate"
    ),
    path("webhooks/<str:webhook_id>/enable", api.EnableView.as_view(), name="api-webhook-enable"),
    path("webhooks/<str:webhook_id>/test", api.TestView.as_view(), name="api-webhook-test"),
    path("webhooks/<str:webhook_id>/deliveries", api.DeliveriesView.as_view(), name="api-webhook-deliveries"),
]
