"""Browser URL: the usage report page."""

from django.urls import path

from .views import usage

urlpatterns = [
    path("usage/", usage, name="usage"),
]
