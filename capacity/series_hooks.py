"""Series (recurring bookings) where capacity's interfaces meet them, answered by the app that books them.

capacity's create takes `repeat` and `allOrNothing` (capacity.placement.fields declares them), and
its booking page, reservation page and `reserve` command show series; booking one is the `series`
app's. It says here, in its AppConfig.ready, who answers each way in; capacity never imports it.
Until an app does, a create with `repeat` is refused as any create refuses it (INVALID_INPUT), a
reservation's page shows no series, and a create's schema answers a reservation only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.exceptions import ImproperlyConfigured

# api_create(view, request, data) -> the API's Response to a create with `repeat`.
# api_answer: the serializer of that answer (`{"series": …}`), one of the create's in the schema.
# book_form(request, form, scope) -> (the first occurrence, its series card) or None (the form says why).
# occurrence_card(reservation, scope) -> what a reservation's page shows of its series, or None.
# command(command, data, options, admission=…) -> None: `manage.py reserve --repeat`.
WAYS = ("api_create", "api_answer", "book_form", "occurrence_card", "command")
_ways: dict[str, Any] = {}


def answer_series(**ways: Any) -> None:
    """Say who answers each way in (the series app's ready() calls this; again is harmless)."""
    unknown = sorted(set(ways) - set(WAYS))
    if unknown:
        raise ImproperlyConfigured(f"capacity.series_hooks has no {', '.join(unknown)}")
    _ways.update(ways)


def way(name: str) -> Callable[..., Any] | None:
    """Return who answers `name` (one of WAYS), or None while no app does."""
    return _ways.get(name)


def answers() -> list[Any]:
    """Return the create's answers besides a reservation, for the schema (the series', if any)."""
    return [_ways["api_answer"]] if "api_answer" in _ways else []
