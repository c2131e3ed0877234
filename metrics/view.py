"""`/metrics`: Prometheus text for operators (session or API token) and for a configured scrape token."""

from __future__ import annotations

import hmac
import os

from django.conf import settings
from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.decorators import (
    api_view,
    authentication_classes,
    content_negotiation_class,
    permission_classes,
    renderer_classes,
)
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.permissions import BasePermission
from rest_framework.renderers import JSONRenderer

from capacity.port import is_operator
from config.api.auth import AUTHENTICATION_CLASSES

from .state import DatabaseCollector
from .store import SharedFilesCollector, metrics_dir

TOKEN_SETTING = "BERTH_METRICS_TOKEN"
SCRAPE = "metrics-scrape"  # request.auth of a caller that gave the scrape token


def scrape_token() -> str:
    """Return the configured scrape token (setting, else environment); empty means none."""
    return getattr(settings, TOKEN_SETTING, None) or os.environ.get(TOKEN_SETTING, "")


class Scraper:
    """The caller a valid scrape token stands for: it may read metrics and nothing else."""

    is_authenticated = True
    is_staff = False
    pk = None


class ScrapeTokenAuthentication(BaseAuthentication):
    """`Authorization: Bearer <BERTH_METRICS_TOKEN>`, as Prometheus sends its `authorization` setting."""

    keyword = b"bearer"

    def authenticate(self, request):
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() != self.keyword:
            return None  # not ours: an API token or the session may still say who it is
        expected = scrape_token()
        if len(parts) != 2 or not expected or not hmac.compare_digest(parts[1], expected.encode()):
            raise AuthenticationFailed("invalid metrics token")
        return Scraper(), SCRAPE

    def authenticate_header(self, request) -> str:
        return 'Bearer realm="metrics"'


class MayReadMetrics(BasePermission):
    """Operators and the scrape token; tenants never (the figures cover every tenant's bookings)."""

    message = "only operators may read metrics"

    def has_permission(self, request, view) -> bool:
        return request.auth == SCRAPE or is_operator(request.user)


class ScraperAccept(BaseContentNegotiation):
    """Answer whatever the scraper accepts: the metrics pick their own format, errors are JSON.

    DRF's negotiation would refuse `Accept: text/plain` (406) before the view runs.
    """

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


@extend_schema(exclude=True)
@api_view(["GET"])
@authentication_classes([ScrapeTokenAuthentication, *AUTHENTICATION_CLASSES])
@permission_classes([MayReadMetrics])
@renderer_classes([JSONRenderer])
@content_negotiation_class(ScraperAccept)
def metrics(request):
    """Answer every metric: the shared event counters and the gauges read from the database now."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SharedFilesCollector(metrics_dir()))
    registry.register(DatabaseCollector())
    encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
    response = HttpResponse(encoder(registry), content_type=content_type)
    response["Cache-Control"] = "no-store"
    return response
