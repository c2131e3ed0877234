"""REST API URLs, mounted at /api/: version 1, the OpenAPI schema and the interactive docs."""

from django.urls import include, path, re_path

from config.api.docs import SchemaView, SwaggerDocsView, api_index, api_not_found

urlpatterns = [
    path("v1/", api_index, name="api-index"),
    path("v1/", include("capacity.api.urls")),
    path("v1/", include("series.urls_api")),
    path("v1/", include("maintenance.api_urls")),
    path("v1/", include("policy.api.urls")),
    path("v1/", include("inventory.api.urls")),
    path("v1/", include("usage.api_urls")),
    path("v1/", include("webhooks.urls_api")),
    path("v1/", include("auditlog.urls")),
    path("v1/", include("slurm.urls_api")),
    path("v1/", include("identity.urls_api")),
    path("v1/", include("agents.urls_api")),
    path("schema/", SchemaView.as_view(), name="api-schema"),
    path("docs/", SwaggerDocsView.as_view(url_name="api-schema"), name="api-docs"),
    # Anything else under /api/ answers JSON, not the site's HTML 404 page.
    re_path(r"^.*$", api_not_found),
]
