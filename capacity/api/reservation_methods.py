"""The methods other apps answer on one reservation's endpoint (`/api/v1/reservations/{id}`).

capacity answers GET (capacity.api.views.ReservationView); an app adds a method with its schema as
a class that defines it (the policy app: PATCH, keepWhenIdle, policy.api.keep_when_idle),
registered in its AppConfig.ready. The URLconf, loaded once every app is ready, builds the view
with them: one path, one URL name, one view. A method no app added answers 405.
"""

from __future__ import annotations

_METHODS: list[type] = []


def register_reservation_methods(methods: type) -> None:
    """Add the methods a class defines to one reservation's endpoint (again is harmless)."""
    if methods not in _METHODS:
        _METHODS.append(methods)


def with_methods(view: type) -> type:
    """Return `view` with the methods apps registered (theirs before its own)."""
    if not _METHODS:
        return view
    return type(view.__name__, (*_METHODS, view), {"__module__": view.__module__, "__doc__": view.__doc__})
