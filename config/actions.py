"""What an app beside capacity asks it to do, without importing what doing it needs.

usage's idle check releases bookings; a release retries the pool's pending work, so importing
`release` would make usage reach all of placement. config imports no app: capacity registers its
`release` here in its AppConfig.ready, usage calls `config.actions.release`; until an app does, the
action raises rather than do nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.exceptions import ImproperlyConfigured

# release(reservation_id, *, now, reason, by, why) -> the released reservation (capacity.services.release).
ACTIONS = ("release",)
_doers: dict[str, Callable[..., Any]] = {}


def register(**doers: Callable[..., Any]) -> None:
    """Say which callables do config's actions (ACTIONS)."""
    unknown = sorted(set(doers) - set(ACTIONS))
    if unknown:
        raise ImproperlyConfigured(f"config.actions has no {', '.join(unknown)}")
    _doers.update(doers)


def release(reservation_id: int | str, **how: Any) -> Any:
    """Release a reservation as capacity's release does (its keywords: now, reason, by, why)."""
    doer = _doers.get("release")
    if doer is None:
        raise ImproperlyConfigured("no installed app does config.actions's 'release'")
    return doer(reservation_id, **how)
