"""Series' browser URLs: releasing a series from an occurrence's page (series/views.py)."""

from django.urls import path

from .views import series_release

urlpatterns = [
    path("series/<int:pk>/release/", series_release, name="series-release"),
]
