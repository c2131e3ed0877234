"""Content negotiation: `?format=` where a view knows it, and the CSV operations (usage.csv, audit.csv)."""

from __future__ import annotations

from rest_framework.negotiation import BaseContentNegotiation, DefaultContentNegotiation


class CsvOnly(BaseContentNegotiation):
    """Answer with the view's one renderer (CSV) whatever the Accept header asks."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None


class FormatOrAccept(DefaultContentNegotiation):
    """DRF's negotiation, except that a `?format=` the view does not render is ignored, not a 404."""

    def filter_renderers(self, renderers, format):
        return [renderer for renderer in renderers if renderer.format == format] or renderers
