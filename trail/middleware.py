"""Give every request an id: the caller's `X-Request-Id` when well-formed, else a new one."""

from __future__ import annotations

import re
import uuid

from trail.context import in_request

HEADER = "X-Request-Id"
# Ids that proxies and tracers send (UUIDs, ULIDs, W3C trace ids, "req-…"): short, no spaces.
WELL_FORMED = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,63}")


def request_id_of(given: str | None) -> str:
    """Return the caller's id if it is 1 to 64 letters, digits, '.', '_', ':' or '-'; else a new one."""
    if given and WELL_FORMED.fullmatch(given):
        return given
    return uuid.uuid4().hex


class RequestId:
    """Name the request's id (and user) for every audit row written while serving it; answer it back."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.request_id = request_id_of(request.headers.get(HEADER))
        with in_request(request, request.request_id):
            response = self.get_response(request)
        response[HEADER] = request.request_id
        return response
