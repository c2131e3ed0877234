"""What a booking holds in GPU-hours: one rule for approvals, maxFutureGpuHours, shares, usage and the pool page.

A device booking holds sevenths of a GPU (inventory.gpu_share, × 7 so sums stay whole): a whole GPU
7, a MIG slice its compute slices (mig-3g.40gb: 3), and a slice booked by an allocation that also
books its parent GPU 0. A whole-node lease books a partitioned GPU together with its slices (so the
EXCLUDE constraint sees either's conflicts); the GPU counts once, as itself. Its GPU-hours are its
sevenths × hours / 7.

Each booking keeps what it holds and its GPU's model as they were when it was booked (the columns
`gpu_sevenths` and `gpu_model` of capacity_devicebooking and its history): everything that counts
GPU-hours reads those, never the device as it is now, so a node that later renames its GPUs moves
nobody's past hours. The commits write them (held_sevenths_sql, gpu_model_sql); any other insert
has them filled by the table's trigger (migration 0041), the same rule in SQL.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

from inventory.gpu_share import MIG_SLICES_PER_GPU, gpu_share

SEVENTHS = MIG_SLICES_PER_GPU
MODEL_LENGTH = 200  # what the bookings and the rollups keep of a model's name


@dataclass(frozen=True)
class BookedDevice:
    """A device one allocation books: its key, class and the GPU it is a slice of (None: not a slice)."""

    id: int
    device_class: str
    parent_id: int | None = None


def held_sevenths(device_class: str, parent_booked: bool) -> int:
    """Return the sevenths of a GPU one booking of this class holds (0: its parent GPU counts it)."""
    if parent_booked:
        return 0
    return int(gpu_share(device_class) * SEVENTHS)


def allocation_sevenths(devices: Iterable[BookedDevice]) -> dict[int, int]:
    """Return device id -> the sevenths its booking holds, for the devices one allocation books."""
    devices = list(devices)
    booked = {d.id for d in devices}
    return {d.id: held_sevenths(d.device_class, d.parent_id in booked) for d in devices}


def gpu_hours(devices: Iterable[BookedDevice], start_ms: int, end_ms: int) -> Fraction:
    """Return the GPU-hours one allocation's devices hold over [start, end) (epoch ms)."""
    sevenths = sum(allocation_sevenths(devices).values())
    return Fraction(sevenths * (end_ms - start_ms), SEVENTHS * 3_600_000)


def gpu_model(device_class: str, attributes: dict) -> str:
    """Return the model a booking of this device keeps: its productName, else its class."""
    return str(attributes.get("productName") or device_class)[:MODEL_LENGTH]


def held_sevenths_sql(device_class: str, parent_booked: str) -> str:
    """Return held_sevenths in SQL over a device-class column and a parent-booked predicate (%% for psycopg)."""
    return (
        f"(CASE WHEN {parent_booked} THEN 0 WHEN {device_class} LIKE 'mig-%%'"
        f" THEN coalesce(substring({device_class} FROM 'mig-(?:[0-9]+c[.])?([0-9]+)g')::int, 1)"
        f" ELSE {SEVENTHS} END)::smallint"
    )


def gpu_model_sql(device: str) -> str:
    """Return gpu_model in SQL over a device row alias (inventory_device)."""
    return f"left(coalesce(nullif({device}.attributes->>'productName', ''), {device}.device_class), {MODEL_LENGTH})"


def gpu_hours_sql(booking: str, since: str | None = None) -> str:
    """Return the GPU-hours a booking row holds (numeric), from `since` (an SQL instant) when given."""
    start = f"lower({booking}.during)" if since is None else f"greatest(lower({booking}.during), {since})"
    return (
        f"{booking}.gpu_sevenths * extract(epoch FROM upper({booking}.during) - {start}) / {SEVENTHS * 3600}"
    )


def gpus_sql(booking: str) -> str:
    """Return the whole GPUs a booking row holds (numeric): its sevenths over 7."""
    return f"{booking}.gpu_sevenths::numeric / {SEVENTHS}"
