"""What every API view shares: the error handler, strict JSON, clean query and path values, pagination."""

from __future__ import annotations

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination
from rest_framework.permissions import IsAuthenticated
from rest_framework.views import APIView

from capacity.access import scope_for
from capacity.errors import api_exception_handler

from .auth import AUTHENTICATION_CLASSES
from .parsers import StrictJSONParser, bad_text


def _whole(raw: str) -> bool:
    return raw.isascii() and raw.isdigit() and bool(raw.lstrip("0"))


class Page(PageNumberPagination):
    """`?page=2&page_size=100`: 50 items a page by default, at most 500 (larger sizes are capped)."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500

    def paginate_queryset(self, queryset, request, view=None):
        # A page or size that is not a whole number is bad input (400); a page past the end is
        # not found (404), as DRF answers.
        for name in (self.page_query_param, self.page_size_query_param):
            raw = request.query_params.get(name)
            if raw is not None and raw not in self.last_page_strings and not _whole(raw):
                raise ValidationError({name: "must be a whole number from 1"})
        return super().paginate_queryset(queryset, request, view)

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            parameter["schema"]["minimum"] = 1
        return parameters


class BerthAPIView(APIView):
    """A view of the Berth API: `{"code", "message"}` errors, strict JSON bodies, caller scope."""

    authentication_classes = AUTHENTICATION_CLASSES
    parser_classes = [StrictJSONParser]
    permission_classes = [IsAuthenticated]
    pagination_class = Page

    def get_exception_handler(self):
        # Also set in REST_FRAMEWORK["EXCEPTION_HANDLER"]; this keeps the API right without it.
        return api_exception_handler

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        # After authentication: an anonymous caller hears 401 before anything about its input.
        for name, value in kwargs.items():
            problem = bad_text(str(value))
            if problem:
                raise ValidationError({name: problem})
        for name, values in request.query_params.lists():
            for value in values:
                problem = bad_text(value) or bad_text(name)
                if problem:
                    raise ValidationError({name: problem})

    @property
    def scope(self):
        """The caller's scope (every tenant for operators)."""
        return scope_for(self.request.user)

    def paginated(self, items, render):
        """Return the paginated response of `items`, the page rendered by `render(page_items)`."""
        # An APIView, not a GenericAPIView: OPTIONS would otherwise ask for a serializer_class.
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(items, self.request, view=self)
        return paginator.get_paginated_response(render(list(page)))
