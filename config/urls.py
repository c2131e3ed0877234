"""Root URLs: the browser pages, the REST API under /api/v1/, and the admin."""

from django.contrib import admin
from django.http import HttpResponsePermanentRedirect
from django.templatetags.static import static
from django.urls import include, path


def favicon(request):
    """Redirect to the icon (browsers ask for /favicon.ico whatever the page links)."""
    # Looked up per request: with hashed static names the manifest exists only after collectstatic,
    # and importing the URLs (`check`, `migrate`) must not need it.
    return HttpResponsePermanentRedirect(static("favicon.svg"))


handler500 = "config.outage.server_error"

urlpatterns = [
    path("favicon.ico", favicon),
    path("admin/", admin.site.urls),
    path("api/", include("config.api_urls")),
    # Sign-in, sign-out and SSO (identity/): ahead of django.contrib.auth.urls.
    path("", include("identity.urls")),
    # Ahead of django.contrib.auth.urls (in inventory.urls): password reset only with mail.
    path("accounts/", include("config.accounts")),
    path("", include("inventory.urls")),
    # Ahead of capacity's node actions (nodes/<name>/actions/<action>/): the drain is maintenance's.
    path("", include("maintenance.urls")),
    path("", include("capacity.urls")),
    path("", include("series.urls")),
    path("", include("metrics.urls")),
    path("", include("policy.urls")),
    path("", include("auditlog.page_urls")),
    path("", include("usage.urls")),
    path("", include("webhooks.urls")),
    path("", include("whatif.urls")),
]
