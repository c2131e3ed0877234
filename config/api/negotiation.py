"""Content negotiation for the API's CSV operations (usage.csv, audit.csv)."""

from __future__ import annotations

from rest_framework.negotiation import BaseContentNegotiation


class CsvOnly(BaseContentNegotiation):
    """Answer with the view's one renderer (CSV) whatever the Accept header asks."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None
