"""Browser URLs: what if, under each pool (operators)."""

from django.urls import path

from .views import whatif, whatif_compare, whatif_run

urlpatterns = [
    path("pools/<slug:slug>/whatif/", whatif, name="whatif"),
    path("pools/<slug:slug>/whatif/compare/", whatif_compare, name="whatif-compare"),
    path("pools/<slug:slug>/whatif/<int:pk>/", whatif_run, name="whatif-run"),
]
