"""Cursor pages for every API list: keyset positions, signed cursors, a size cap and a byte cap.

A list is read from a *source*: `source(position, backwards, limit)` returns at most `limit` rows
after `position` (before it when `backwards`), in list order (reversed when `backwards`), and
`key(row)` gives a row's position. A position is a tuple of the row's ordering values, so a page
costs one index range scan however deep it is: no OFFSET, no COUNT.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from typing import Any

from django.core import signing
from django.db.models import F, QuerySet
from django.db.models.fields.tuple_lookups import Tuple, TupleGreaterThan, TupleLessThan
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import CursorPagination
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.utils.urls import remove_query_param, replace_query_param

Source = Callable[[tuple | None, bool, int], Sequence[Any]]

MAX_PAGE_BYTES = 1024 * 1024
TAMPERED = "not a cursor this list gave out: follow the next and previous links as they are"


def _whole(raw: str) -> bool:
    return raw.isascii() and raw.isdigit() and bool(raw.lstrip("0"))


def plain(value: Any) -> Any:
    """Return `value` as JSON can carry it and as it sorts (UTC ISO times with microseconds)."""
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).isoformat(timespec="microseconds")
    return value


def position_of(row: Any, fields: Sequence[str]) -> tuple:
    """Return the ordering values of `row` (a model instance, a dict or a tuple by field index)."""
    if isinstance(row, dict):
        return tuple(plain(row[name]) for name in fields)
    return tuple(plain(getattr(row, name)) for name in fields)


def queryset_source(queryset: QuerySet, fields: Sequence[str], descending: bool = False) -> Source:
    """Return the source that pages `queryset` by `fields` (together unique), all one direction."""

    def source(position, backwards, limit):
        down = descending != backwards
        rows = queryset.order_by(*(f"-{name}" if down else name for name in fields))
        if position is not None:
            rows = rows.filter(
                (TupleLessThan if down else TupleGreaterThan)(
                    Tuple(*(F(name) for name in fields)), list(position)
                )
            )
        return list(rows[:limit])

    return source


def list_source(rows: Sequence[Any], key: Callable[[Any], tuple]) -> Source:
    """Return the source that pages `rows`, already in list order, by `key` (unique and rising)."""

    def source(position, backwards, limit):
        ordered = list(reversed(rows)) if backwards else list(rows)
        if position is not None:
            after = (lambda row: key(row) < position) if backwards else (lambda row: key(row) > position)
            ordered = [row for row in ordered if after(row)]
        return ordered[:limit]

    return source


class Page(CursorPagination):
    """`?page_size=100&cursor=…`: 50 items a page by default, at most 500 (a larger size is a 400).

    Answers `{"next", "previous", "results"}`; follow `next` for the following page. A page also
    holds at most MAX_PAGE_BYTES of JSON items: a longer page is cut after the last item that fits
    (never before the first), and `next` goes on from the item after it. Cursors are signed for
    the list that gave them out; any other value is a 400 naming `cursor`.
    """

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500
    ordering = "id"  # unused: each list brings its source

    def read(self, request, source: Source, key: Callable[[Any], tuple]) -> list:
        """Return this request's page of `source`, remembering where the neighbouring pages start."""
        self.request, self.key = request, key
        if "page" in request.query_params:
            raise ValidationError({"page": "lists are paged by cursor: follow the next link"})
        self.page_size = self._size(request)
        self.base_url = remove_query_param(request.build_absolute_uri(), self.cursor_query_param)
        position, backwards = self._decode(request)
        rows = list(source(position, backwards, self.page_size + 1))
        more = len(rows) > self.page_size
        rows = rows[: self.page_size]
        if backwards:
            rows.reverse()
            self.has_previous, self.has_next = more, True
        else:
            self.has_previous, self.has_next = position is not None, more
        self.backwards, self.page = backwards, rows
        return rows

    def cut_to_bytes(self, items: list) -> list:
        """Return the items within MAX_PAGE_BYTES (at least one); the neighbouring link follows the cut."""
        render = JSONRenderer().render
        order = list(reversed(items)) if self.backwards else items
        total, kept = 0, 0
        for item in order:
            total += len(render(item)) + 1
            if kept and total > MAX_PAGE_BYTES:
                break
            kept += 1
        if kept == len(items):
            return items
        # A page read backwards keeps the items nearest its cursor: its tail.
        if self.backwards:
            self.page, self.has_previous = self.page[-kept:], True
            return items[-kept:]
        self.page, self.has_next = self.page[:kept], True
        return items[:kept]

    def _size(self, request) -> int:
        size = request.query_params.get(self.page_size_query_param)
        if size is None:
            return self.page_size
        if not _whole(size):
            raise ValidationError({self.page_size_query_param: "must be a whole number from 1"})
        # A size over the cap is refused, not quietly cut: a client that asked for 1,000 and got
        # 500 would read the page as the whole answer.
        if int(size) > self.max_page_size:
            raise ValidationError({self.page_size_query_param: f"at most {self.max_page_size}"})
        return int(size)

    def _salt(self) -> str:
        return f"berth.cursor:{self.request.path}"

    def _decode(self, request) -> tuple[tuple | None, bool]:
        raw = request.query_params.get(self.cursor_query_param)
        if raw is None:
            return None, False
        try:
            token = signing.loads(raw, salt=self._salt())
            position, backwards = token["p"], token["b"]
            if not isinstance(position, list) or not isinstance(backwards, bool):
                raise ValueError
        except (signing.BadSignature, KeyError, TypeError, ValueError, UnicodeError):
            raise ValidationError({self.cursor_query_param: TAMPERED}) from None
        return tuple(position), backwards

    def _link(self, row: Any, backwards: bool) -> str:
        token = signing.dumps({"p": list(self.key(row)), "b": backwards}, salt=self._salt(), compress=True)
        return replace_query_param(self.base_url, self.cursor_query_param, token)

    def get_next_link(self):
        if not self.has_next:
            return None
        return self._link(self.page[-1], False) if self.page else self.base_url

    def get_previous_link(self):
        if not self.has_previous:
            return None
        return self._link(self.page[0], True) if self.page else self.base_url

    def get_paginated_response(self, data):
        return Response({"next": self.get_next_link(), "previous": self.get_previous_link(), "results": data})

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"].update(minimum=1, maximum=self.max_page_size)
        return parameters
