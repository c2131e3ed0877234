"""Pool rules: the pool's policies plug into booking at named points (docs/architecture.md, Pool rules).

A rule is one module of the `policy` app, registered when the app is ready; capacity calls the rules
through this registry and never imports them. Each rule says which points it serves and a cheap
`applies(pool)` test on the pool as the lookup already read it (placers.loader.PoolRow): a pool that
sets no rule runs no rule code and sends no statement for them. Rules run in registration order.

The points, in a booking's order:

- BEFORE_LOCK: every prepared request (reserve, preview, earliest start, the port) and each
  occurrence of a series, after validation, before any lock or row; may refuse (CapacityError).
  A rule marked `reads_extra` is given capacity's own fields of the request too (keep_when_idle:
  services.prepare.Prepared.extra; none for a series' later occurrences, its first was asked).
- BEFORE_CREATE: a create (a booking, a series once, an instance), before any lock, with no
  transaction open: the one point where a rule may take time (an outside call); may refuse.
- PLACED: in the booking's transaction, once its allocation is written; may refuse (the booking
  rolls back) or return the conditions it wrote (an approval hold). A rule that needs the tenant's
  quota lock (`quota_lock`) makes its pool place creates inline: a batch takes no quota lock.
- RECLAIMS: a regular request about to be planned with spot work counted free (placers.preempt);
  a rule may say it may take back other work too (borrowed GPUs of a guarantee): any yes is yes.
- SPARES: there too, before the pool's holds are read: a rule may answer the latest start spot
  work taken back at a moment must have (spotMinRuntime); younger work is spared. The earliest wins.
- NOTICE: a regular request that fits only by taking work back (placers.attempt, services.preview):
  a rule may answer the Notice its victims get (spotNotice): the request starts no sooner, the
  victims keep their devices until then (placers.take_back gives it). The first answer wins.
- COMMITTED: in the placement's attempt, once its rows are written under the pool's lock, in a
  pool whose lock said it has shares (placers.attempt); may send it back pending (raise Pending:
  the attempt rolls back to its savepoint) or return what it borrowed (a Borrowed it recorded).
- SPLIT: a pool-lease batch's plans, under the pool's lock, in a pool with shares (placers.batch);
  a rule names those it must judge one at a time (they place inline, through COMMITTED).
- NO_ROOM: a spot request that found no room on free capacity, in its
  transaction (placers.inline; the pool-lease batch, holding the pool, for one of no gang); may place it another way
  (lending idle owners' GPUs) and answer the placement's Outcome; the first answer wins.
- AT_COMMIT: a placed booking's transaction.on_commit side; AFTER_COMMIT: once it is committed.
  Named, not called yet: the first rule that needs one wires its call.

Two points come after a booking, and read no pool row: every rule there runs, `applies` unasked
(work a pool lent outlives its lendIdle), each sending what placement sent there before.

- ENDED: placed bookings a release ends (services.release), in its transaction, their bookings
  just cut, with those of them that ran on lent GPUs: a rule ends what lived within them.
- REPORTED: a node's report naming its processes' owners has committed (agents.report, via the port).

One hook beside the points, the queue (`register_queue`, a `Queue`): the order pending work is
tried in where a rule orders a pool's queue (the fair queue of a pool with shares, policy.fair_queue).
It is asked across pools, before any pool is read, so it has no `applies`: its `figures` (pool pk
-> tenant pk -> figure; a pool is a key only if the queue orders it) are read in one statement, once
a worker round (capacity.worker) or by the batch and the retry that were given none, and only the
pools among their keys are ordered: the pool-lease batch's claim (placers.batch, `queue_claim`) and
the retry of pending work (services.release, `queue_retry`). A pending reservation's page and
answer say where it stands (`queue_text`, `queue_places`: no statement for none pending). With no
queue registered, every pool keeps its own order (oldest first; the retry's turns by tenant) and
nothing is read.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # annotations only: the registry loads nothing of placement's
    from capacity.placement import PlacementRequest
    from capacity.placers.commit import Owner
    from capacity.placers.loader import PoolRow
    from capacity.placers.planning import Planner
    from capacity.placers.types import Borrowed, Outcome, PlacerConfig

BEFORE_LOCK, BEFORE_CREATE, RECLAIMS, SPARES, NOTICE, COMMITTED, SPLIT, PLACED, NO_ROOM = (
    "before-lock",
    "before-create",
    "reclaims",
    "spares",
    "notice",
    "committed",
    "split",
    "placed",
    "no-room",
)
AT_COMMIT, AFTER_COMMIT, ENDED, REPORTED = "at-commit", "after-commit", "ended", "reported"
POINTS = (
    BEFORE_LOCK,
    BEFORE_CREATE,
    RECLAIMS,
    SPARES,
    NOTICE,
    COMMITTED,
    SPLIT,
    PLACED,
    NO_ROOM,
    AT_COMMIT,
    AFTER_COMMIT,
    ENDED,
    REPORTED,
)
# Points placement does not call yet: the first rule that needs one wires its call (a rule there
# would never run, so registering one is refused).
UNCALLED = (AT_COMMIT, AFTER_COMMIT)


@dataclass(frozen=True)
class Booking:
    """A booking a rule reads at PLACED and after: just written, in its transaction."""

    reservation_pk: int
    tenant_pk: int
    tenant_slug: str
    pool: PoolRow
    request: PlacementRequest
    now: datetime


class Pending(Exception):
    """A COMMITTED rule sends the booking back pending; the message is the reason it shows."""


@dataclass(frozen=True)
class NoRoom:
    """A spot request that found no room on free capacity, as a NO_ROOM rule reads it.

    `built`: the request's planner when the caller built it; `holds_pool`: the caller holds the
    pool's lock already (the pool-lease batch), so rows other transactions hold are skipped;
    `memo`: what a rule keeps across one batch's requests (None inline), keyed by its name.
    """

    request: PlacementRequest
    pool: PoolRow
    owner: Owner
    config: PlacerConfig
    now: datetime | None
    built: Planner | None = None
    holds_pool: bool = False
    memo: dict[str, Any] | None = None


# The condition of a regular booking that starts when the spot work it takes back has had its
# notice (a NOTICE rule's: policy.notice); the reservation page reads it.
STARTS_LATER = "StartsLater"


@dataclass(frozen=True)
class Notice:
    """The notice a NOTICE rule gives work taken back: how long, and what it writes.

    `start(request, now)`: the request starting no sooner than now + duration (None: no window is
    left); `give(victims, conditions, at, now)`: the locked victims kept until `at`, their Preempted
    conditions written as notice; `starts_later(request)`: the condition of the booking that waits.
    """

    duration: timedelta
    start: Callable[[PlacementRequest, datetime], PlacementRequest | None]
    give: Callable[[Sequence[int], Sequence[dict], datetime, datetime], None]
    starts_later: Callable[[PlacementRequest], dict]


@dataclass(frozen=True)
class Rule:
    """One pool rule: its name, whether a pool sets it, and what it does at each point it serves.

    `asked`: for BEFORE_CREATE, the pool's settings its answer depends on; a create that reads its
    pool again asks again only when they changed.
    """

    name: str
    applies: Callable[[PoolRow], bool]
    before_lock: Callable[..., None] | None = None  # (request, pool, now[, extra: see reads_extra])
    before_create: Callable[[Any, str], None] | None = None  # (services.prepare.Prepared, identity)
    reclaims: Callable[[PoolRow, PlacementRequest], bool] | None = None
    spares: Callable[[PoolRow, datetime], datetime | None] | None = None
    notice: Callable[[PoolRow], Notice | None] | None = None
    committed: Callable[[PoolRow, int, PlacementRequest], Borrowed | None] | None = None
    split: Callable[[PoolRow, Sequence[tuple[int, int, PlacementRequest]]], set[int]] | None = None
    placed: Callable[[Booking], list | None] | None = None
    no_room: Callable[[NoRoom], Outcome | None] | None = None
    at_commit: Callable[[Booking], None] | None = None
    after_commit: Callable[[Booking], None] | None = None
    ended: Callable[[Sequence[int], Sequence[int], datetime], None] | None = None
    reported: Callable[[int], None] | None = None
    quota_lock: bool = False
    asked: Callable[[PoolRow], Hashable] | None = None
    reads_extra: bool = False  # BEFORE_LOCK: called with the request's `extra` as a fourth argument

    @property
    def points(self) -> tuple[str, ...]:
        """Return the points the rule serves."""
        return tuple(p for p in POINTS if getattr(self, p.replace("-", "_")) is not None)


_AT: dict[str, tuple[Rule, ...]] = {point: () for point in POINTS}


def register_rule(rule: Rule) -> None:
    """Add a rule at each point it serves; a rule registered again under its name is replaced in place."""
    if not rule.points:
        raise ValueError(f"the rule {rule.name} serves no point")
    waiting = [p for p in rule.points if p in UNCALLED]
    if waiting:
        raise ValueError(f"the rule {rule.name} serves {waiting}: placement calls no rule there yet")
    for point in POINTS:
        rules = list(_AT[point])
        names = [r.name for r in rules]
        if rule.name in names:
            if point in rule.points:
                rules[names.index(rule.name)] = rule
            else:
                del rules[names.index(rule.name)]
        elif point in rule.points:
            rules.append(rule)
        _AT[point] = tuple(rules)


def registered() -> dict[str, tuple[Rule, ...]]:
    """Return the rules at each point, in the order they run."""
    return dict(_AT)


def at(point: str, pool: PoolRow | None) -> tuple[Rule, ...]:
    """Return the rules at `point` the pool sets (none for no pool)."""
    rules = _AT[point]
    if not rules or pool is None:
        return ()
    return tuple(r for r in rules if r.applies(pool))


def before_lock(
    request: PlacementRequest, pool: PoolRow, now: datetime, extra: Mapping[str, Any] | None = None
) -> None:
    """Run the pool's BEFORE_LOCK rules on a prepared request; a refusal raises CapacityError.

    `extra`: capacity's own fields of the request, for the rules that read them (`reads_extra`).
    """
    for rule in at(BEFORE_LOCK, pool):
        if rule.reads_extra:
            rule.before_lock(request, pool, now, extra or {})
        else:
            rule.before_lock(request, pool, now)


def before_create(prepared: Any, identity: str, asked: tuple | None = None) -> tuple:
    """Run the pool's BEFORE_CREATE rules on a create (a services.prepare.Prepared) with no transaction open.

    Returns what they were asked on; given the same `asked`, asks nothing again.
    """
    rules = at(BEFORE_CREATE, prepared.pool)
    which = tuple((r.name, r.asked(prepared.pool) if r.asked else None) for r in rules)
    if rules and which != asked:
        for rule in rules:
            rule.before_create(prepared, identity)
    return which


def reclaims(pool: PoolRow, request: PlacementRequest) -> bool:
    """Return whether a RECLAIMS rule lets the regular request take back more than spot work."""
    return any(rule.reclaims(pool, request) for rule in at(RECLAIMS, pool))


def spares(pool: PoolRow, when: datetime) -> datetime | None:
    """Return the latest start spot work taken back at `when` must have (None: any may be taken)."""
    young = [y for rule in at(SPARES, pool) if (y := rule.spares(pool, when)) is not None]
    return min(young, default=None)


def notice(pool: PoolRow) -> Notice | None:
    """Return the notice work taken back in the pool gets (None: it ends at once)."""
    for rule in at(NOTICE, pool):
        given = rule.notice(pool)
        if given is not None:
            return given
    return None


def committed(pool: PoolRow, reservation_pk: int, request: PlacementRequest) -> Borrowed | None:
    """Run the COMMITTED rules on a booking just written under the pool's lock; return what it borrowed.

    A rule that refuses raises Pending (the caller rolls back to its savepoint).
    """
    borrowed = None
    for rule in at(COMMITTED, pool):
        borrowed = rule.committed(pool, reservation_pk, request) or borrowed
    return borrowed


def split(pool: PoolRow, batch: Sequence[tuple[int, int, PlacementRequest]]) -> set[int]:
    """Return the keys of a batch's (key, tenant pk, request) that a SPLIT rule judges one at a time."""
    if not batch:
        return set()
    apart: set[int] = set()
    for rule in at(SPLIT, pool):
        apart |= rule.split(pool, batch)
    return apart


def placed(booking: Booking, *, batch: bool = False) -> list | None:
    """Run the pool's PLACED rules on a booking just written; return the conditions the last one wrote.

    A batch runs only the rules that need no quota lock (a pool with one places its creates inline).
    """
    written = None
    for rule in at(PLACED, booking.pool):
        if batch and rule.quota_lock:
            continue
        conditions = rule.placed(booking)
        if conditions is not None:
            written = conditions
    return written


def no_room(asked: NoRoom) -> Outcome | None:
    """Run the pool's NO_ROOM rules on a spot request that found no room; return the first placement."""
    for rule in at(NO_ROOM, asked.pool):
        outcome = rule.no_room(asked)
        if outcome is not None:
            return outcome
    return None


def ended(pks: Sequence[int], lent: Sequence[int], now: datetime) -> None:
    """Run every ENDED rule on placed bookings a release just ended (`lent`: those that ran lent)."""
    for rule in _AT[ENDED]:
        rule.ended(pks, lent, now)


def reported(node_pk: int) -> None:
    """Run every REPORTED rule once a node's report naming its processes' owners has committed."""
    for rule in _AT[REPORTED]:
        rule.reported(node_pk)


def places_inline(pool: PoolRow) -> bool:
    """Return whether a PLACED rule the pool sets needs the tenant's quota lock: its creates place inline."""
    return any(r.quota_lock for r in at(PLACED, pool))


# pool pk -> tenant pk -> the tenant's figure in the pool's queue (None: none). A pool is a key only
# if the queue orders it.
Figures = Mapping[int, Mapping[int, float | None]]


class Place(Protocol):
    """Where a pending reservation stands in its pool's queue: `position` (1-based) of `of`, its figure."""

    @property
    def position(self) -> int: ...

    @property
    def of(self) -> int: ...

    @property
    def fair_share(self) -> float | None: ...


@dataclass(frozen=True)
class Queue:
    """The order of the pools' queues a rule orders (see the module's docstring).

    `figures(pools, now)`: the figures of the pools asked (None: every pool); `claim(figures of one
    pool)`: the ORDER BY over that pool's reservations `r` and its parameters; `retry(pools, figures,
    now, limit)`: up to `limit` pending pks of these pools, some ordered, in the retry's order;
    `places(reservations, now)`: pk -> Place of those waiting in an ordered queue; `text(reservation,
    scope, now)`: where one stands, in words, or "".
    """

    name: str
    figures: Callable[[Iterable[int] | None, datetime | None], Figures]
    claim: Callable[[Mapping[int, float | None]], tuple[str, dict[str, Any]]]
    retry: Callable[[Sequence[int], Figures, datetime, int], list[int]]
    places: Callable[[Iterable[Any], datetime | None], dict[int, Place]]
    text: Callable[[Any, Any, datetime | None], str]


_QUEUE: list[Queue] = []  # at most one: two orders of one queue cannot both hold


def register_queue(queue: Queue) -> None:
    """Set the queue's order; one registered again under its name replaces it, another is refused."""
    if _QUEUE and _QUEUE[0].name != queue.name:
        raise ValueError(f"the queue is ordered by {_QUEUE[0].name} already")
    _QUEUE[:] = [queue]


def queue_figures(pool_ids: Iterable[int] | None = None, now: datetime | None = None) -> Figures:
    """Return the figures of the pools asked (None: every pool) the queue orders; none without a queue."""
    return _QUEUE[0].figures(pool_ids, now) if _QUEUE else {}


def queue_claim(figures: Mapping[int, float | None]) -> tuple[str, dict[str, Any]]:
    """Return the ORDER BY over one ordered pool's reservations `r`, and its parameters."""
    return _QUEUE[0].claim(figures)


def queue_retry(pool_ids: Sequence[int], figures: Figures, now: datetime, limit: int) -> list[int]:
    """Return up to `limit` pending reservation pks of these pools, some ordered, in retry order."""
    return _QUEUE[0].retry(pool_ids, figures, now, limit)


def queue_places(reservations: Iterable[Any], now: datetime | None = None) -> dict[int, Place]:
    """Return pk -> Place of those of `reservations` waiting in an ordered queue (none without a queue)."""
    return _QUEUE[0].places(reservations, now) if _QUEUE else {}


def queue_text(reservation: Any, scope: Any = None, now: datetime | None = None) -> str:
    """Return where a pending reservation stands in its pool's queue, in words; "" out of one."""
    if not _QUEUE:
        return ""
    return _QUEUE[0].text(reservation, scope, now)
