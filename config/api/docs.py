"""Interactive API docs (Swagger UI) from the vendored swagger-ui-dist files, and the API's JSON 404."""

from __future__ import annotations

from django.conf import settings
from django.http import JsonResponse
from django.templatetags.static import static
from django.utils.csp import CSP
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_safe
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from config.api.auth import AUTHENTICATION_CLASSES
from config.api.exceptions import error_body

# static/vendor/swagger-ui-dist@<version>/ holds swagger-ui.css, swagger-ui-bundle.js,
# swagger-ui-standalone-preset.js, favicon-32x32.png (and the CSS source map the CSS names, so a
# manifest static storage can collect it) from the npm package, unchanged, with LICENSE and NOTICE.
SWAGGER_UI_VERSION = "5.35.0"
SWAGGER_UI_DIR = f"vendor/swagger-ui-dist@{SWAGGER_UI_VERSION}"


class SchemaView(SpectacularAPIView):
    """The OpenAPI schema (YAML; JSON with ?format=json), left out of itself."""

    authentication_classes = AUTHENTICATION_CLASSES

    @extend_schema(exclude=True)
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)


class SwaggerDocsView(SpectacularSwaggerView):
    """drf-spectacular's Swagger UI page, served from our static files instead of a CDN."""

    authentication_classes = AUTHENTICATION_CLASSES

    @extend_schema(exclude=True)
    def get(self, request, *args, **kwargs):
        response = super().get(request, *args, **kwargs)
        # drf-spectacular's page starts Swagger UI from an inline script.
        response._csp_config = {**settings.SECURE_CSP, "script-src": [CSP.SELF, CSP.UNSAFE_INLINE]}
        return response

    @staticmethod
    def _swagger_ui_resource(filename: str) -> str:
        return static(f"{SWAGGER_UI_DIR}/{filename}")

    @staticmethod
    def _swagger_ui_favicon() -> str:
        return static(f"{SWAGGER_UI_DIR}/favicon-32x32.png")


# Neither writes anything, so a POST needs no CSRF check: an unknown path is a 404 whatever its method
# (Django's check would answer first, with a 403 for a token caller that sends no CSRF cookie).
@csrf_exempt
@require_safe
def api_index(request) -> JsonResponse:
    """Answer GET /api/v1/ with where the docs and the schema are, and the main collections."""
    return JsonResponse(
        {
            "docs": request.build_absolute_uri("/api/docs/"),
            "schema": request.build_absolute_uri("/api/schema/"),
            "reservations": request.build_absolute_uri("/api/v1/reservations"),
            "pools": request.build_absolute_uri("/api/v1/pools"),
            "nodes": request.build_absolute_uri("/api/v1/nodes"),
            "webhooks": request.build_absolute_uri("/api/v1/webhooks"),
        }
    )


@csrf_exempt
def api_not_found(request, *args, **kwargs) -> JsonResponse:
    """Answer an unknown /api/ path as the API answers everything: JSON with a code."""
    return JsonResponse(error_body("NOT_FOUND", f"no API endpoint {request.path}"), status=404)
