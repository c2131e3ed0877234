"""What every API view shares: the error handler, strict JSON, clean query and path values, pagination."""

from __future__ import annotations

from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.pagination import PageNumberPagination
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import JSONRenderer
from rest_framework.utils.urls import replace_query_param
from rest_framework.views import APIView

from capacity.access import node_of, scope_for
from config.api.exceptions import api_exception_handler

from .auth import AUTHENTICATION_CLASSES
from .parsers import StrictJSONParser, bad_text


def _whole(raw: str) -> bool:
    return raw.isascii() and raw.isdigit() and bool(raw.lstrip("0"))


MAX_PAGE_BYTES = 1024 * 1024


class Page(PageNumberPagination):
    """`?page=2&page_size=100`: 50 items a page by default, at most 500 (a larger size is a 400).

    A page also holds at most MAX_PAGE_BYTES of JSON items: a longer page is cut after the last item
    that fits (never before the first), and its `next` link goes on from the item after it.
    """

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500

    def paginate_queryset(self, queryset, request, view=None):
        # A page or size that is not a whole number is bad input (400); a page past the end is
        # not found (404), as DRF answers.
        # ("last" names a page, never a size.)
        page = request.query_params.get(self.page_query_param)
        if page is not None and page not in self.last_page_strings and not _whole(page):
            raise ValidationError({self.page_query_param: "must be a whole number from 1"})
        size = request.query_params.get(self.page_size_query_param)
        if size is not None and not _whole(size):
            raise ValidationError({self.page_size_query_param: "must be a whole number from 1"})
        # A size over the cap is refused, not quietly cut: a client that asked for 1,000 and got
        # 500 would read the page as the whole answer.
        if size is not None and int(size) > self.max_page_size:
            raise ValidationError({self.page_size_query_param: f"at most {self.max_page_size}"})
        return super().paginate_queryset(queryset, request, view)

    def cut_to_bytes(self, items: list) -> list:
        """Return the longest prefix of rendered `items` within MAX_PAGE_BYTES; point `next` after it."""
        render = JSONRenderer().render
        total, kept = 0, 0
        for item in items:
            total += len(render(item)) + 1
            if kept and total > MAX_PAGE_BYTES:
                break
            kept += 1
        if kept < len(items):
            self.next_after = (self.page.start_index() - 1) + kept
        return items[:kept]

    def get_next_link(self):
        after = getattr(self, "next_after", None)
        if after is None:
            return super().get_next_link()
        # The next page must start exactly at item `after`: the largest size at most the items
        # this page kept that divides `after` puts a page boundary there.
        size = max(d for d in range(1, self.page.paginator.per_page + 1) if after % d == 0)
        url = replace_query_param(self.request.build_absolute_uri(), self.page_size_query_param, size)
        return replace_query_param(url, self.page_query_param, after // size + 1)

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

    # A node's own credential may call a view only when it says so (the node report, the node's
    # assignments), and only for that node (the view's `name`).
    for_nodes = False

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        node = node_of(request.user)
        if node is not None and not (self.for_nodes and kwargs.get("name") == node):
            raise PermissionDenied("a node credential may only report for its node and read its assignments")
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
        return paginator.get_paginated_response(paginator.cut_to_bytes(render(list(page))))
