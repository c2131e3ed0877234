"""Who acts, and in which request: read by every writer of the audit's sources.

The request id middleware (trail.middleware) keeps the request here; a command names itself with
`acting_as`. `actor()` is read when a row is written, so an API token's user (authenticated by DRF
inside the view, after the middleware ran) is the one named. The reservation trigger cannot read
Python: `stamp()` hands it both names as transaction settings (`berth.actor`, `berth.request_id`).
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connection

SYSTEM = "system"

_request: contextvars.ContextVar[Any] = contextvars.ContextVar("trail_request", default=None)
_request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("trail_request_id", default=None)
_acting: contextvars.ContextVar[str | None] = contextvars.ContextVar("trail_acting", default=None)

_SET = "SELECT set_config('berth.actor', %s, %s), set_config('berth.request_id', %s, %s)"


@contextmanager
def in_request(request: Any, request_id: str) -> Iterator[None]:
    """Name `request`'s user and `request_id` for the changes made inside."""
    tokens = (_request.set(request), _request_id.set(request_id))
    try:
        yield
    finally:
        _request.reset(tokens[0])
        _request_id.reset(tokens[1])


@contextmanager
def acting_as(actor: str | None) -> Iterator[None]:
    """Name `actor` (a command, say) for the changes made inside when no user is signed in."""
    if not actor:
        yield
        return
    token = _acting.set(actor)
    try:
        yield
    finally:
        _acting.reset(token)


def actor() -> str:
    """Return who acts now: the request's user (or node credential), else the command, else system."""
    request = _request.get()
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return user.get_username()
    return _acting.get() or SYSTEM


def request_id() -> str | None:
    """Return the id of the request being served, None outside one."""
    return _request_id.get()


def stamp() -> None:
    """Name the actor and request id to the database for the rest of the caller's transaction."""
    with connection.cursor() as cur:
        cur.execute(_SET, [actor(), True, request_id() or "", True])
