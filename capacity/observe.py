"""What capacity tells whoever listens when booking work happens: named events and their observers.

Capacity says that something happened (`tell("placement", ...)`) without knowing who listens; an
app registers a callback per event in its `AppConfig.ready` (the metrics app counts them). Telling
an event nobody observes costs a dict lookup. A callback runs where the event happens, inside its
transaction: one that must not count a rolled-back event defers itself (`transaction.on_commit`).

The events and what they carry (positional, then keyword arguments):

- `placement`: placer, status ("placed" or "pending"); reason, lost (races lost and replanned),
  preempted (spot reservation pks taken back), queued_at (pool-lease), retry (a pending booking
  tried again rather than a request's first placement).
- `preemptions`: placer, how many spot reservations were taken back outside a placement (repair).
- `repair`: kind (repair, drain, maintenance); moved, no_room (allocations of one reservation).
- `batch`: how many reservations one pool-lease batch took.
- `reclaims`: {pool slug: spot reservations taken back from lent GPUs}, cause.
- `lent_gpu_hours`: {pool slug: GPU-hours lent work ran}, told when that work ends.
"""

from __future__ import annotations

from collections.abc import Callable

EVENTS = ("placement", "preemptions", "repair", "batch", "reclaims", "lent_gpu_hours")

_observers: dict[str, tuple[Callable[..., None], ...]] = {event: () for event in EVENTS}


def register_observer(event: str, callback: Callable[..., None]) -> None:
    """Call `callback` with the event's arguments each time capacity tells `event`."""
    if event not in _observers:
        raise ValueError(f"no event {event!r}: capacity tells {', '.join(EVENTS)}")
    if callback not in _observers[event]:
        _observers[event] = (*_observers[event], callback)


def tell(event: str, /, *args, **kwargs) -> None:
    """Tell every observer of `event` (a name of EVENTS) that it happened."""
    for callback in _observers[event]:
        callback(*args, **kwargs)
