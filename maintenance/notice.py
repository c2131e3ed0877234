"""Tell a booking that a maintenance window will take its GPUs: its MaintenanceScheduled condition.

A placed reservation holding a live allocation on a window's node that overlaps the window (and
ends after now) carries the condition, status True, naming the soonest such window: its id, start,
end, reason and the reservation's nodes in it. A booking that ends before the window starts gets
none. The condition is kept true as windows and bookings change: scheduling (running work, and
without `move` everything it overlaps), deleting a window (status False, reason WindowCancelled,
when no other window takes its place) and a window's end, each just after its own transaction
(reservation rows are locked before pools elsewhere: repair), and every move of BookingRepair in
the move's transaction (`after_move`, registered with capacity's repair: a booking moved off has
nothing left in the window; the condition goes).
The webhooks app's trigger says so (`reservation.maintenance_scheduled`, `.maintenance_cancelled`),
the node agent writes reservations/ID.maintenance, the API answers `maintenance`.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.db import connection

from capacity.port import MAINTENANCE_SCHEDULED, Reservation, stamp
from trail.context import stamp as name_actor

REASON = "MaintenanceWindow"
CANCELLED = "WindowCancelled"  # the window was deleted
CHANGED = "WindowChanged"  # its span changed and no longer overlaps the booking (windows.retell)

# Per reservation, each window not yet over that overlaps one of its live allocations on the
# window's nodes, soonest first, with the reservation's nodes in it.
_WINDOWS_SQL = """
SELECT a.reservation_id, w.id, w.starts_at, w.ends_at, w.reason, array_agg(DISTINCT n.name ORDER BY n.name)
  FROM capacity_allocation a
  JOIN capacity_maintenancewindownode wn ON wn.node_id = a.node_id
  JOIN capacity_maintenancewindow w ON w.id = wn.window_id
  JOIN inventory_node n ON n.id = a.node_id
 WHERE a.reservation_id = ANY(%(ids)s) AND a.released_at IS NULL AND a.ends_at > %(now)s
   AND a.starts_at < w.ends_at AND a.ends_at > w.starts_at
   AND w.ends_at > %(now)s AND w.ended_at IS NULL
 GROUP BY a.reservation_id, w.id
 ORDER BY a.reservation_id, w.starts_at, w.id
"""


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def condition(window: int, start: datetime, end: datetime, reason: str, nodes: list[str]) -> dict:
    """Return the MaintenanceScheduled condition of a booking window `window` will take GPUs from."""
    where = ", ".join(nodes)
    text = f"maintenance window {window} on {where}, {stamp(_ms(start))} to {stamp(_ms(end))}"
    if reason:
        text += f": {reason}"
    return {
        "type": MAINTENANCE_SCHEDULED,
        "status": "True",
        "reason": REASON,
        "message": f"{text}. What this booking holds there is moved off at the window's start",
        "window": window,
        "at": start.isoformat(),
        "end": end.isoformat(),
        "windowReason": reason,
        "nodes": nodes,
    }


def cancelled(previous: dict, reason: str = CANCELLED) -> dict:
    """Return the condition of a booking whose window was deleted (or changed so that it no longer
    overlaps it): status False, nothing moves."""
    nodes = ", ".join(previous.get("nodes") or [])
    what = "was cancelled" if reason == CANCELLED else "changed and no longer overlaps this booking"
    return {
        "type": MAINTENANCE_SCHEDULED,
        "status": "False",
        "reason": reason,
        "message": f"maintenance window {previous.get('window')} on {nodes} {what}: nothing moves for it",
        "window": previous.get("window"),
    }


def notices(reservation_ids: Iterable[int], now: datetime) -> dict[int, dict]:
    """Return reservation id -> its True MaintenanceScheduled condition, for those a window overlaps."""
    ids = sorted(set(reservation_ids))
    if not ids:
        return {}
    found: dict[int, dict] = {}
    with connection.cursor() as cur:
        cur.execute(_WINDOWS_SQL, {"ids": ids, "now": now})
        for reservation, window, start, end, reason, nodes in cur.fetchall():
            found.setdefault(reservation, condition(window, start, end, reason, list(nodes)))
    return found


def with_notice(conditions: list[dict], notice: dict | None, *, gone: str | None = None) -> list[dict]:
    """Return `conditions` with the MaintenanceScheduled one made `notice`.

    Without a notice a true one is dropped, or with `gone` (CANCELLED, CHANGED) turned False with
    that reason; a False one stays.
    """
    kept = [c for c in conditions if c.get("type") != MAINTENANCE_SCHEDULED]
    previous = next((c for c in conditions if c.get("type") == MAINTENANCE_SCHEDULED), None)
    if notice is not None:
        return [*kept, notice]
    if previous is None:
        return kept
    if previous.get("status") != "True":
        return conditions
    return [*kept, cancelled(previous, gone)] if gone else kept


def refresh(reservation_ids: Iterable[int], now: datetime, *, gone: str | None = None) -> list[int]:
    """Make the MaintenanceScheduled condition of these placed reservations true now; return those changed.

    Locks their rows (in id order, as repair does) and writes only those whose condition changed.
    """
    ids = sorted(set(reservation_ids))
    if not ids:
        return []
    name_actor()  # the reservation events name who scheduled or deleted the window
    rows = list(
        Reservation.objects.select_for_update(of=("self",))
        .filter(pk__in=ids, status=Reservation.Status.PLACED)
        .order_by("pk")
        .values_list("pk", "conditions")
    )
    found = notices([pk for pk, _ in rows], now)
    changed = []
    for pk, conditions in rows:
        after = with_notice(conditions, found.get(pk), gone=gone)
        if after != conditions:
            Reservation.objects.filter(pk=pk).update(conditions=after, updated_at=now)
            changed.append(pk)
    return changed


def naming(window_id: int) -> list[int]:
    """Return the placed reservations whose true MaintenanceScheduled condition names this window."""
    return list(
        Reservation.objects.filter(
            status=Reservation.Status.PLACED,
            conditions__contains=[{"type": MAINTENANCE_SCHEDULED, "status": "True", "window": window_id}],
        ).values_list("pk", flat=True)
    )


def notice_of(reservation) -> dict | None:
    """Return a placed reservation's true MaintenanceScheduled condition, else None."""
    if getattr(reservation, "status", None) != Reservation.Status.PLACED:
        return None
    found = reservation.condition(MAINTENANCE_SCHEDULED)
    return found if found and found.get("status") == "True" else None


def after_move(reservation, conditions: list[dict], now: datetime, windowed: bool) -> list[dict]:
    """Return a booking's conditions as BookingRepair moves it (its hook, in the move's transaction):
    a booking moved off a window's node is no longer told of it; one left there is."""
    if windowed or notice_of(reservation) is not None:
        return with_notice(conditions, notices([reservation.pk], now).get(reservation.pk))
    return conditions
