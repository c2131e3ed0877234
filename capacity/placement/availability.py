"""Free capacity hour by hour: free atoms per class, and the largest free NVLink block.

A tenant planning a run asks "how many GPUs are free when, and could 8 of them share NVLink?".
This answers both for a span of hour blocks from the nodes a viewer may book and the busy
intervals of their devices. An atom counts as free in a block only when nothing books it at any
instant of that block, so every count is one a booking of that whole hour could have. A booked GPU
takes its MIG slices and a booked slice takes its GPU, as at commit. The NVLink block is the
largest set of free whole GPUs on one node that are all NVLink-connected to each other.

The first block runs from `start` to the next whole hour; the others are whole hours.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .pick import NV_RANK, link_rank
from .types import MaintenanceSpan, NodeView

HOUR_MS = 3_600_000

Busy = Mapping[str, Iterable[tuple[int, int]]]  # atom id -> [start, end) epoch-ms intervals


@dataclass(frozen=True, slots=True)
class Availability:
    """Free atoms per class and the largest free NVLink block, per hour block."""

    starts: tuple[int, ...]  # block i runs from starts[i] to starts[i + 1] (the last to `end`)
    end: int
    totals: Mapping[str, int]  # class -> atoms counted (healthy, bookable, on the nodes given)
    free: Mapping[str, tuple[int, ...]]  # class -> free atoms per block
    # Per block, the most free GPUs on one node all linked by NVLink; None: no NVLink pair at all.
    nvlink: tuple[int, ...] | None
    nvlink_most: int = 0  # the largest NVLink block any node has with every GPU free
    # The maintenance windows of the counted nodes that overlap the span, soonest first, each with
    # the names of its nodes among them.
    windows: tuple[tuple[MaintenanceSpan, tuple[str, ...]], ...] = ()


def hour_starts(start: int, hours: int) -> tuple[int, ...]:
    """Return the starts of `hours` blocks: `start`, then every whole hour after it."""
    first = (start // HOUR_MS + 1) * HOUR_MS
    return (start, *(first + i * HOUR_MS for i in range(hours - 1)))


@dataclass(frozen=True, slots=True)
class _Shape:
    """One node's devices as bits: what a booking of each takes, the atoms per class, NVLink pairs."""

    takes: tuple[int, ...]  # device position -> its bit, its parent's and its slices'
    classes: Mapping[str, int]  # class -> bits of its atoms
    gpus: int  # bits of whole-GPU atoms (not slices, not split)
    neighbours: tuple[int, ...]  # bit position -> NVLink neighbours' bits (whole GPUs only)


def _shape(node: NodeView) -> _Shape:
    bit = {d.id: 1 << i for i, d in enumerate(node.devices)}
    split = {d.parent_id for d in node.devices if d.parent_id is not None}
    takes = dict(bit)
    for d in node.devices:
        if d.parent_id is not None and d.parent_id in bit:
            takes[d.id] |= bit[d.parent_id]
            takes[d.parent_id] |= bit[d.id]
    classes: dict[str, int] = defaultdict(int)
    gpus = 0
    for d in node.devices:
        if d.healthy and d.bookable and d.id not in split:
            classes[d.device_class] |= bit[d.id]
            if d.parent_id is None:
                gpus |= bit[d.id]
    whole = [d for d in node.devices if bit[d.id] & gpus]
    neighbours = [0] * len(node.devices)
    for i, a in enumerate(whole):
        for b in whole[i + 1 :]:
            if _nvlinked(node, a.id, b.id):
                neighbours[bit[a.id].bit_length() - 1] |= bit[b.id]
                neighbours[bit[b.id].bit_length() - 1] |= bit[a.id]
    return _Shape(tuple(takes[d.id] for d in node.devices), dict(classes), gpus, tuple(neighbours))


def _nvlinked(node: NodeView, a: str, b: str) -> bool:
    """Return whether inventory reports NVLink between two GPUs (in either direction)."""
    link = node.links.get(a, {}).get(b) or node.links.get(b, {}).get(a)
    return link is not None and link_rank(link) == NV_RANK


def largest_clique(free: int, neighbours: Sequence[int], memo: dict[tuple[int, tuple[int, ...]], int]) -> int:
    """Return the size of the largest set of bits in `free` that are all neighbours of each other."""
    key = (free, tuple(neighbours))
    found = memo.get(key)
    if found is None:
        found = memo[key] = _grow(0, free, neighbours)
    return found


def _grow(size: int, candidates: int, neighbours: Sequence[int]) -> int:
    # Branch on each candidate in turn, keeping only its neighbours; a few GPUs per node keep it small.
    best = size
    while candidates:
        if size + candidates.bit_count() <= best:
            break
        low = candidates & -candidates
        candidates ^= low
        best = max(best, _grow(size + 1, candidates & neighbours[low.bit_length() - 1], neighbours))
    return best


def availability(nodes: Sequence[NodeView], busy: Busy, start: int, hours: int) -> Availability:
    """Return free atoms per class and the largest free NVLink block for `hours` blocks from `start`.

    `nodes` are the nodes to count (the caller leaves out those the viewer may not book); `busy`
    holds the booked intervals of their devices. Nodes of one `shape` (pick.node_shape(), or a
    stand-in for it) share their bit layout and NVLink answers, so a pool of one board type costs
    little beyond its bookings: a node without bookings in the span costs a few additions, one with
    bookings a sweep over their starts and ends.
    """
    starts = hour_starts(start, hours)
    first = starts[1] if hours > 1 else start + HOUR_MS
    end = first + (hours - 1) * HOUR_MS
    totals: dict[str, int] = defaultdict(int)
    lost: dict[str, list[int]] = defaultdict(lambda: [0] * (hours + 1))  # difference arrays
    cover: dict[int, list[int]] = defaultdict(lambda: [0] * (hours + 1))  # NVLink size -> coverage
    shapes: dict[object, _Shape] = {}
    memo: dict[tuple[int, tuple[int, ...]], int] = {}
    any_nvlink = False
    most = 0
    closed: dict[MaintenanceSpan, list[str]] = {}
    get = busy.get
    for node in nodes:
        key = node.shape if node.shape is not None else node.id
        shape = shapes.get(key)
        if shape is None:
            shape = shapes[key] = _shape(node)
        for cls, bits in shape.classes.items():
            totals[cls] += bits.bit_count()
        linked = any(shape.neighbours)
        whole = largest_clique(shape.gpus, shape.neighbours, memo) if linked else 0
        any_nvlink = any_nvlink or linked
        most = max(most, whole)
        # What the node's bookings hold, by blocks [lo, hi): one booking's devices share a span.
        spans: dict[tuple[int, int], int] = {}
        takes = shape.takes
        for position, device in enumerate(node.devices):
            held = get(device.id)
            if not held:
                continue
            for s, e in held:
                if e <= start or s >= end:
                    continue
                span = _blocks(s, e, start, first, end, hours)
                spans[span] = spans.get(span, 0) | takes[position]
        # A maintenance window takes every atom of its node for its span, as a booking of them all.
        for window in node.windows:
            if window.end > start and window.start < end:
                closed.setdefault(window, []).append(node.id)
                span = _blocks(window.start, window.end, start, first, end, hours)
                spans[span] = spans.get(span, 0) | ((1 << len(node.devices)) - 1)
        if not spans:
            if whole:
                cover[whole][0] += 1
                cover[whole][hours] -= 1
            continue
        _sweep(shape, spans, hours, lost, cover if linked else None, memo)
    free = {cls: _running(totals[cls], lost.get(cls), hours, -1) for cls in sorted(totals)}
    nvlink = None
    if any_nvlink:
        running = {size: _running(0, diff, hours, 1) for size, diff in cover.items()}
        nvlink = tuple(
            max((size for size, counts in running.items() if counts[i] > 0), default=0) for i in range(hours)
        )
    windows = tuple(
        (span, tuple(sorted(names)))
        for span, names in sorted(closed.items(), key=lambda i: (i[0].start, i[0].id))
    )
    return Availability(starts, end, dict(totals), free, nvlink, most, windows)


def _blocks(s: int, e: int, start: int, first: int, end: int, hours: int) -> tuple[int, int]:
    """Return the hour blocks [lo, hi) that an interval [s, e) overlapping the span touches."""
    lo = 0 if s < first else 1 + (s - first) // HOUR_MS
    # The block holding the end's last instant is the last one taken.
    hi = hours if e >= end else 1 if e <= first else 2 + (e - 1 - first) // HOUR_MS
    last = hours - 1
    return (lo if lo < last else last, hi)


def _sweep(
    shape: _Shape,
    spans: Mapping[tuple[int, int], int],
    hours: int,
    lost: dict[str, list[int]],
    cover: dict[int, list[int]] | None,
    memo: dict[tuple[int, tuple[int, ...]], int],
) -> None:
    """Add one node's taken atoms and free NVLink block to the difference arrays, span by span.

    Spans may overlap in blocks (two bookings of one device can share an hour), so each device bit
    counts the spans holding it and is taken while that count is above zero.
    """
    events: dict[int, list[tuple[int, int]]] = defaultdict(list)
    events[0] = []  # the hours before the first booking are a segment too
    for (lo, hi), bits in spans.items():
        events[lo].append((bits, 1))
        events[hi].append((bits, -1))
    counts: dict[int, int] = defaultdict(int)
    taken = 0
    times = sorted(events)
    for at, upto in zip(times, [*times[1:], hours], strict=True):
        if at >= hours:
            break
        for bits, step in events[at]:
            while bits:
                low = bits & -bits
                bits ^= low
                counts[low] += step
                if counts[low]:
                    taken |= low
                else:
                    taken &= ~low
        if taken:
            for cls, bits in shape.classes.items():
                n = (bits & taken).bit_count()
                if n:
                    lost[cls][at] += n
                    lost[cls][upto] -= n
        if cover is not None:
            size = largest_clique(shape.gpus & ~taken, shape.neighbours, memo)
            if size:
                cover[size][at] += 1
                cover[size][upto] -= 1


def _running(base: int, diff: list[int] | None, hours: int, sign: int) -> tuple[int, ...]:
    """Return base plus the running sum of a difference array (times sign), per block."""
    if diff is None:
        return (base,) * hours
    out, total = [], 0
    for i in range(hours):
        total += diff[i]
        out.append(base + sign * total)
    return tuple(out)
