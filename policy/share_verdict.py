"""Shares of a pool: may a tenant hold what it now holds, and what did it borrow to hold it.

A tenant's holding at an instant is the whole-GPU equivalents its bookings in the pool hold then.
Past its guarantee it borrows: within its borrowing limit (None: no limit), and only from what is
left once every other tenant's unused guarantee that it does not lend is kept free (its guarantee
less its lending limit; a lending limit of None lends all of it). Judged at every instant of a
window, over the holdings with the new booking in them. Pure: numbers in, no clock, no Django.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass

EPSILON = 1e-6  # slices are sevenths: sums of them are compared with room for float error


@dataclass(frozen=True)
class Share:
    """One tenant's share of a pool, in whole GPUs."""

    guaranteed: float
    borrowing_limit: float | None = None
    lending_limit: float | None = None

    @property
    def kept(self) -> float:
        """Return the part of the guarantee others may never borrow."""
        lent = self.guaranteed if self.lending_limit is None else min(self.lending_limit, self.guaranteed)
        return self.guaranteed - lent


NO_SHARE = Share(0.0)


@dataclass(frozen=True)
class Verdict:
    """What the shares say of a tenant's holding over a window.

    `refused` is the message when the holding breaks a share, else None. `borrowed` is the most
    the tenant holds past its guarantee at an instant of the window (at most `gpus`, the new
    booking's own GPUs), `lenders` how many other tenants' unused guarantee that took.
    """

    refused: str | None = None
    borrowed: float = 0.0
    lenders: int = 0


def gpus_text(value: float) -> str:
    """Return GPUs as people read them: 8, 8.43."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


def gpus_phrase(value: float) -> str:
    """Return a number of GPUs in words: 1 GPU, 2 GPUs, 0.43 GPUs."""
    text = gpus_text(value)
    return f"{text} GPU" if text == "1" else f"{text} GPUs"


def judge(
    tenant: Hashable,
    gpus: float,
    window: tuple[float, float],
    holds: Iterable[tuple[Hashable, float, float, float]],
    shares: Mapping[Hashable, Share],
    capacity: float,
) -> Verdict:
    """Judge `tenant`'s holding over `window` with a new booking of `gpus` already in `holds`.

    `holds` are (tenant, start, end, gpus) spans of the pool's bookings; `shares` the pool's rows
    (a tenant without one is guaranteed 0, borrows without limit); `capacity` the GPUs the
    guarantees were checked against. The verdict is taken at the instant that borrows the most.
    """
    start, end = window
    own = shares.get(tenant, NO_SHARE)
    edges: dict[float, list[tuple[Hashable, float]]] = {}
    for who, s, e, g in holds:
        s, e = max(s, start), min(e, end)
        if e <= s or g <= 0:
            continue
        edges.setdefault(s, []).append((who, g))
        edges.setdefault(e, []).append((who, -g))
    held: dict[Hashable, float] = {}
    worst = Verdict()
    for instant in sorted(edges):
        if instant >= end:
            break
        for who, g in edges[instant]:
            held[who] = held.get(who, 0.0) + g
        past = held.get(tenant, 0.0) - own.guaranteed
        if past <= EPSILON:
            continue
        if own.borrowing_limit is not None and past > own.borrowing_limit + EPSILON:
            return Verdict(
                refused=(
                    f"borrowingLimitGpus: the booking would take the team {gpus_phrase(past)} past"
                    f" its guarantee of {gpus_text(own.guaranteed)}; it may borrow"
                    f" {gpus_phrase(own.borrowing_limit)}"
                )
            )
        used = sum(held.values())
        kept = sum(max(0.0, s.kept - held.get(who, 0.0)) for who, s in shares.items() if who != tenant)
        if used + kept > capacity + EPSILON:
            return Verdict(
                refused=(
                    f"no GPUs to borrow: the booking would take the team {gpus_phrase(past)} past its"
                    f" guarantee of {gpus_text(own.guaranteed)}, and other teams' guarantees keep"
                    f" {gpus_text(kept)} of the pool's {gpus_text(capacity)} GPUs for themselves"
                )
            )
        borrowed = min(gpus, past)
        if borrowed > worst.borrowed + EPSILON:
            worst = Verdict(borrowed=borrowed, lenders=_lenders(tenant, past, held, shares, capacity))
    return worst


def _lenders(
    tenant: Hashable,
    past: float,
    held: Mapping[Hashable, float],
    shares: Mapping[Hashable, Share],
    capacity: float,
) -> int:
    """Return how many other tenants' unused guarantee `past` GPUs beyond the guarantee take.

    The pool's unguaranteed GPUs go first (after what others borrow of them), then the largest
    unused guarantees, so that as few tenants as may be lend.
    """
    guaranteed = sum(s.guaranteed for s in shares.values())
    others_past = sum(
        max(0.0, h - shares.get(who, NO_SHARE).guaranteed) for who, h in held.items() if who != tenant
    )
    need = past - max(0.0, capacity - guaranteed - others_past)
    unused = sorted(
        (max(0.0, s.guaranteed - held.get(who, 0.0)) for who, s in shares.items() if who != tenant),
        reverse=True,
    )
    lenders = 0
    for spare in unused:
        if need <= EPSILON or spare <= EPSILON:
            break
        need -= spare
        lenders += 1
    return lenders


def within(
    tenant: Hashable,
    gpus: float,
    window: tuple[float, float],
    holds: Iterable[tuple[Hashable, float, float, float]],
    shares: Mapping[Hashable, Share],
) -> bool:
    """Return whether `tenant`, with `gpus` more over `window`, stays within its guarantee throughout.

    `holds` are the bookings without the new one. Such a booking may reclaim borrowed GPUs.
    """
    own = shares.get(tenant, NO_SHARE)
    start, end = window
    mine = [
        (max(s, start), min(e, end), g)
        for who, s, e, g in holds
        if who == tenant and min(e, end) > max(s, start)
    ]
    points = sorted({start, *(s for s, _, _ in mine)})
    return all(
        sum(g for s, e, g in mine if s <= point < e) + gpus <= own.guaranteed + EPSILON for point in points
    )
