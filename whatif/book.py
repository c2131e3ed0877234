"""The in-memory booking book a what-if run places on, and what one side of the run did.

`Booked` is one placed request's hold, `Book` the holds not yet ended by the simulated clock (and
the rest set aside), `Side` each request's fate; whatif.engine fills them, whatif.figures reads them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from capacity.port import Window


@dataclass(slots=True)
class Booked:
    """One placed request's hold: its window, devices (own keys), claims and what it counts for."""

    start: int
    end: int
    pks: frozenset[int]
    claims: tuple[tuple[str, str, int], ...]  # node, resource, amount
    spot: bool
    tenant: str
    gpus: float  # whole-GPU equivalents: a slice counts its share of its GPU
    held: float = 0.0  # what the shares count: a slice its compute slices over 7 (inventory.gpu_share)
    borrowed: float = 0.0  # GPUs past its tenant's guarantee (the shares' verdict), 0 without shares


@dataclass
class Side:
    """What one side of a run did: each request's fate, the bookings, the preemptions."""

    requests: int = 0
    at_once: int = 0
    waits: list[int] = field(default_factory=list)  # ms, of every placed request
    never: int = 0
    preemptions: int = 0
    reclaims: int = 0  # borrowing bookings a tenant within its guarantee took back
    bookings: list[Booked] = field(default_factory=list)
    tenants: dict[str, dict[str, float]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(float))
    )
    tenant_waits: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))


class Book:
    """The run's bookings that have not ended by the simulated clock, and the rest set aside.

    `by_device` holds each device's live bookings and `version` counts changes per node, so the
    earliest-start search can keep a node's timeline until something on the node changes.
    `changed` names the nodes whose bookings were added or cut short since the free index last
    read them; `swept` those that only lost bookings ended by `swept_to`, which no search from
    then on can see.
    """

    def __init__(self, device_node: dict[int, str]) -> None:
        self.live: list[Booked] = []
        self.done: list[Booked] = []
        self.by_device: dict[int, list[Booked]] = defaultdict(list)
        self.version: dict[str, int] = defaultdict(int)
        self.device_node = device_node
        self.claims = False  # whether any booking claims a scalar
        self.changed: set[str] = set()
        self.swept: set[str] = set()
        self.swept_to = 0

    def add(self, booked: Booked) -> None:
        self.live.append(booked)
        self.claims = self.claims or bool(booked.claims)
        for pk in booked.pks:
            self.by_device[pk].append(booked)
        self.touched(booked)

    def touched(self, booked: Booked, changed: bool = True) -> None:
        """Note that the booking's nodes changed (it was added or cut short; or set aside: not `changed`)."""
        for node in {self.device_node[pk] for pk in booked.pks}:
            self.version[node] += 1
            (self.changed if changed else self.swept).add(node)

    def sweep(self, now: int) -> None:
        """Set aside what ended by `now`: no later request's window can reach back before its arrival."""
        keep = []
        for b in self.live:
            if b.end > now:
                keep.append(b)
                continue
            self.done.append(b)
            for pk in b.pks:
                self.by_device[pk].remove(b)
            self.touched(b, changed=False)
        self.live = keep
        self.swept_to = max(self.swept_to, now)

    def overlapping(self, window: Window) -> list[Booked]:
        start, end = window.start, window.end
        return [b for b in self.live if b.start < end and b.end > start]

    def all(self) -> list[Booked]:
        return self.done + self.live


def next_end(bookings: Iterable[Booked], after: int) -> int | None:
    """Return the first instant past `after` at which one of the bookings ends."""
    return min((b.end for b in bookings if b.end > after and b.end > b.start), default=None)
