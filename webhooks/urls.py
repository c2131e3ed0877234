"""The webhooks page."""

from django.urls import path

from .views import webhooks

urlpatterns = [path("webhooks/", webhooks, name="webhooks")]
