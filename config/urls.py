"""Root URLs: the browser pages, the REST API under /api/v1/, and the admin."""

from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

urlpatterns = [
    # Browsers ask for /favicon.ico whatever the page links.
    path("favicon.ico", RedirectView.as_view(url=static("favicon.svg"), permanent=True)),
    path("admin/", admin.site.urls),
    path("api/", include("config.api_urls")),
    path("", include("inventory.urls")),
    path("", include("capacity.urls")),
]
