"""Root URLs: the browser pages, the REST API under /api/v1/, and the admin."""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("config.api_urls")),
    path("", include("inventory.urls")),
    path("", include("capacity.urls")),
]
