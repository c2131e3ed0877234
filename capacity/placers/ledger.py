"""A batch's ledger: the pool's bookings and scalar claims over the batch's windows, read once.

One query returns them as arrays (parsed in C), bookings ordered by start and claims by node, so
building the ledger costs no Python loop over its rows: taken() slices the bookings by bisection
and filters the slice in C, and a node's claims are grouped the first time a plan asks for them
(a batch asks about the few hundred nodes its shortlists rank, not every node with a claim).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping
from itertools import compress

from capacity.db.cursors import prepared_cursor
from capacity.db.literals import window_range
from capacity.placement import PlacementRequest, Ranked, Window
from capacity.placers.claims import WindowUse

from .claims import CLAIM_ORDER, Claims
from .commit import member_devices
from .index import PoolIndex
from .loader import NodeIndex, PoolRow
from .sql import key_in

# date_part() is float arithmetic, exact to the millisecond here and cheaper than extract(). Each
# aggregate sorts on its own (PostgreSQL 15 does not share the sort), so each sorts by a whole row's
# key: two bookings of one device never start together, and claims sort by all their columns.
_LEDGER_SQL = f"""
SELECT b.devices, b.starts, b.ends, c.nodes, c.names, c.starts, c.ends, c.amounts
  FROM (SELECT array_agg(device_id ORDER BY lo, device_id) AS devices,
               array_agg(lo ORDER BY lo, device_id) AS starts, array_agg(hi ORDER BY lo, device_id) AS ends
          FROM (SELECT device_id, (date_part('epoch', lower(during)) * 1000)::bigint AS lo,
                       (date_part('epoch', upper(during)) * 1000)::bigint AS hi
                  FROM capacity_devicebooking
                 WHERE during && %(during)s::tstzrange
                   AND {key_in("device_id", "%(low)s::bigint", "%(high)s::bigint")}) AS w) AS b,
       (SELECT array_agg(node_id ORDER BY {CLAIM_ORDER}) AS nodes, array_agg(resource ORDER BY {CLAIM_ORDER}) AS names,
               array_agg(lo ORDER BY {CLAIM_ORDER}) AS starts, array_agg(hi ORDER BY {CLAIM_ORDER}) AS ends,
               array_agg(amount ORDER BY {CLAIM_ORDER}) AS amounts
          FROM (SELECT node_id, resource, amount, (date_part('epoch', lower(during)) * 1000)::bigint AS lo,
                       (date_part('epoch', upper(during)) * 1000)::bigint AS hi
                  FROM capacity_scalarclaim
                 WHERE during && %(during)s::tstzrange
                   AND {key_in("node_id", "%(node_low)s::bigint", "%(node_high)s::bigint")}) AS s) AS c
"""


class Ledger:
    """A pool's bookings and scalar claims as one batch sees them: read once, then kept by its plans."""

    def __init__(
        self, index: PoolIndex, starts: list[int], ends: list[int], devices: list[int], claims: Claims
    ):
        self.index = index
        # Start ms (sorted), end ms and device pk of each booking, in three lists: with the longest
        # booking's length, a window's overlaps lie in one slice (found by bisection), which
        # taken() filters in C.
        self.starts, self.ends, self.devices = starts, ends, devices
        self.longest = max(map(int.__sub__, ends, starts), default=0)
        self.claims = claims

    @classmethod
    def load(cls, pool: PoolRow, index: PoolIndex, windows: Iterable[Window]) -> Ledger:
        """Read the bookings and scalar claims that overlap any of the windows (one query)."""
        windows = list(windows)
        span = Window(min(w.start for w in windows), max(w.end for w in windows))
        with prepared_cursor(binary=True) as cur:
            cur.execute(_LEDGER_SQL, {**index.keys, "during": window_range(span)})
            devices, starts, ends, nodes, names, c_starts, c_ends, amounts = cur.fetchone()
        devices, starts, ends = devices or [], starts or [], ends or []
        # Only the pool's devices: its key range may hold other pools' too.
        if not index.device_node.keys() >= set(devices):  # set operations in C
            ours = list(map(index.device_node.__contains__, devices))
            devices, starts, ends = (list(compress(v, ours)) for v in (devices, starts, ends))
        claims = Claims(
            index.nodes.node_pk,
            index.node_name,
            nodes or [],
            names or [],
            c_starts or [],
            c_ends or [],
            amounts or [],
        )
        return cls(index, starts, ends, devices, claims)

    def taken(self, window: Window) -> set[int]:
        """Return the devices not free for the window: booked, or tied to a booked slice or GPU."""
        start, end = window.start, window.end
        first = bisect_left(self.starts, start - self.longest)
        inside = bisect_left(self.starts, start)
        last = bisect_left(self.starts, end)
        # Bookings that start in the window overlap it; of those that start before, the ones that
        # end after it starts.
        booked = set(self.devices[inside:last])
        booked.update(compress(self.devices[first:inside], map(start.__lt__, self.ends[first:inside])))
        return self.index.tie_into(booked)

    def used(self, window: Window, claims: Mapping[str, int]) -> WindowUse:
        """Return node -> resource -> the most claimed at once in the window, for claimed resources."""
        return WindowUse(self.claims, window, sorted(r for r, n in claims.items() if n > 0))

    def book(self, request: PlacementRequest, ranked: Ranked, index: NodeIndex, sign: int = 1) -> None:
        """Add (sign −1: take back) what a plan books: its atoms with their slices, and its claims."""
        w = request.during
        for pk in member_devices(ranked, index)[2]:
            if sign > 0:
                i = bisect_right(self.starts, w.start)
                self.starts.insert(i, w.start)
                self.ends.insert(i, w.end)
                self.devices.insert(i, pk)
            else:
                i = next(
                    i
                    for i in range(bisect_left(self.starts, w.start), bisect_right(self.starts, w.start))
                    if self.ends[i] == w.end and self.devices[i] == pk
                )
                del self.starts[i], self.ends[i], self.devices[i]
        self.longest = max(self.longest, w.end - w.start)
        for resource, amount in request.resources.items():
            if amount > 0:
                held = self.claims.held(ranked.node_id, resource)
                if sign > 0:
                    held.append((w.start, w.end, amount))
                else:
                    held.remove((w.start, w.end, amount))
