"""What every placer and its callers share: the placers' names, their configuration and their answer."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from capacity.placement import Plan, SchedulerPlugin

if TYPE_CHECKING:  # Annotations only: the configuration's readers (conf, what if) need no writes.
    from .commit import Committed


@dataclass(frozen=True)
class Borrowed:
    """What a placed booking borrowed past its tenant's guarantee (a pool's shares, policy.borrowing):
    whole GPUs, from how many tenants, and the condition recorded on the reservation."""

    gpus: float
    lenders: int
    condition: dict


INLINE = "inline"
POOL_LEASE = "pool-lease"
PLACERS = (INLINE, POOL_LEASE)


@dataclass(frozen=True)
class PlacerConfig:
    """What placement reads from settings: the placer, plugins, weights, top N, attempts, batch size
    and linger, and the random source."""

    plugins: tuple[SchedulerPlugin, ...] = ()
    weights: Mapping[str, float] | None = None
    top_n: int = 5
    max_attempts: int = 3
    random: Callable[[], float] | None = None
    placer: str = INLINE
    max_batch: int = 64
    linger: float = 0.0  # seconds run_placer waits after a batch that was not full


@dataclass
class Outcome:
    """A placement's answer: placed with its allocations, or pending with a reason."""

    status: str  # "placed" | "pending" | "queued" (the pool-lease placer took it)
    committed: list[Committed] = field(default_factory=list)
    reason: str = ""
    plan: Plan | None = None
    lost: list[str] = field(default_factory=list)
    preempted: tuple[int, ...] = ()  # spot reservations this placement took back
    borrowed: Borrowed | None = None  # what it borrowed past its tenant's guarantee (pools with shares)
    lent_from: tuple[int, ...] = ()  # the idle reservations whose GPUs spot work was lent (lend.py)
    starts_later: dict | None = None  # its StartsLater condition: it waits for spot work's notice
