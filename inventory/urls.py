"""Browser URLs of inventory: sign-in and sign-out (the node pages are capacity's, as they show bookings)."""

from django.urls import include, path

urlpatterns = [
    path("accounts/", include("django.contrib.auth.urls")),
]
