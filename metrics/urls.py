"""`/metrics`: the Prometheus exposition."""

from django.urls import path

from .view import metrics

urlpatterns = [path("metrics", metrics, name="metrics")]
