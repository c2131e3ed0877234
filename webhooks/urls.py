"""The webhooks page."""

from django.urls import path

from .views import calendar_feed, webhooks

urlpatterns = [
    path("webhooks/", webhooks, name="webhooks"),
    path("calendar/<str:token>.ics", calendar_feed, name="calendar-feed"),
]
