"""Request parsers that refuse what the database or the JSON renderer would choke on, as 400s.

Python's json module accepts things that later fail far from the request: 1e400 (infinity, which
jsonb and the renderer refuse), lone surrogates such as "\\ud800" (not UTF-8), "\\u0000" (Postgres text
cannot hold NUL), integers beyond a bigint, and nesting deep enough to exhaust the stack. These
parsers check the parsed document once, so every endpoint answers INVALID_INPUT instead of a 500.
"""

from __future__ import annotations

import math
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser, JSONParser, get_encoding

# JavaScript's safe integers: every client can represent them, and sums stay far inside a bigint.
MAX_INT = 2**53 - 1
MAX_DEPTH = 32


def bad_text(value: str) -> str | None:
    """Return why a string cannot be stored (a NUL, or not encodable as UTF-8), else None."""
    if "\x00" in value:
        return "must not contain NUL characters"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "must be valid Unicode (no lone surrogates)"
    return None


def check_document(value: Any, where: str = "body", depth: int = 0) -> None:
    """Raise ParseError naming the first value the API cannot take."""
    if depth > MAX_DEPTH:
        raise ParseError(f"{where}: nested more than {MAX_DEPTH} levels deep")
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, int):
        if abs(value) > MAX_INT:
            raise ParseError(f"{where}: integers must be between -{MAX_INT} and {MAX_INT}")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ParseError(f"{where}: numbers must be finite")
    elif isinstance(value, str):
        problem = bad_text(value)
        if problem:
            raise ParseError(f"{where}: strings {problem}")
    elif isinstance(value, dict):
        for key, item in value.items():
            problem = bad_text(key)
            if problem:
                raise ParseError(f"{where}: keys {problem}")
            check_document(item, f"{where}.{key}" if where != "body" else key, depth + 1)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            check_document(item, f"{where}[{i}]", depth + 1)


class StrictJSONParser(JSONParser):
    """JSON that the services and Postgres can take; anything else is a ParseError (400)."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError(f"JSON parse error - nested more than {MAX_DEPTH} levels deep") from None
        check_document(data)
        return data


class PlainTextParser(BaseParser):
    """A text/plain body as one string (such as the output of `nvidia-smi topo -m`)."""

    media_type = "text/plain"

    def parse(self, stream, media_type=None, parser_context=None):
        encoding = get_encoding(parser_context or {})
        # The JSON and form parsers go through request.body, which enforces this limit; a raw stream does not.
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        raw = stream.read(limit + 1) if limit is not None else stream.read()
        if limit is not None and len(raw) > limit:
            raise RequestDataTooBig("the request body is too large")
        try:
            text = raw.decode(encoding)
        except (UnicodeDecodeError, LookupError) as exc:
            raise ParseError(f"the body is not {encoding} text: {exc}") from None
        problem = bad_text(text)
        if problem:
            raise ParseError(f"body: text {problem}")
        return text
