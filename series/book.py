"""Booking a series: one recurrence rule, one reservation per occurrence, booked in one transaction.

A series is prepared once, like any create (capacity's services.prepare: input, first window, tenant,
pool, the pool's limits), its rule expanded once (series.repeat) and every occurrence's
window checked against the pool's limits, all before any lock. Then, in one transaction: the
Series row, and per occurrence the charged insert and the inline placement a single create does
(capacity's services.reserve), with the planner built once; the tenant's quota lock is taken by the first
insert and held to the commit; maxFutureGpuHours is checked once, after the last occurrence.
Series always place inline, whichever placer the site runs: the answer says what each occurrence
got, and allOrNothing needs to know before it commits. A refused quota charge leaves that
occurrence pending with the quota's reason (the worker retries it, as any pending booking).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction

from capacity.port import (
    EVERYONE,
    IDEMPOTENCY_CONFLICT,
    IDEMPOTENCY_IN_FLIGHT,
    INLINE,
    INVALID_INPUT,
    QUOTA_EXCEEDED,
    QUOTA_EXCEEDED_REASON,
    CapacityError,
    Outcome,
    Planner,
    Prepared,
    Reservation,
    Scope,
    Series,
    Window,
    before_lock,
    consult_outside,
    insert_routed,
    place_routed,
    placer_config,
    prepare,
    reservation_fields,
    retry_on_conflict,
    route,
    run_admit,
    set_pending,
    to_datetime,
)
from config.errors import SERIES_NOT_PLACED

from .occurrences import Occurrence, occurrences_of, reason_of
from .repeat import Repeat, expand, parse_repeat

SERIES_FIELDS = ("repeat", "allOrNothing")


@dataclass(frozen=True)
class SeriesResult:
    """A series after reserve_series: the row, its occurrences in start order, and whether it is new."""

    series: Series
    occurrences: list[Occurrence]
    created: bool


class SeriesNotPlaced(CapacityError):
    """allOrNothing refused: the occurrences that would not place, each with its reason; nothing booked."""

    def __init__(self, missed: list[Occurrence], total: int) -> None:
        super().__init__(
            SERIES_NOT_PLACED,
            f"allOrNothing: {len(missed)} of {total} occurrences would not place; nothing was booked",
        )
        self.occurrences = missed


@dataclass(frozen=True)
class PreparedSeries:
    """A series made ready before any lock: the first occurrence prepared, the rule, each one's start."""

    prepared: Prepared
    repeat: Repeat
    all_or_nothing: bool
    starts: list[int]

    def occurrence(self, start: int) -> Prepared:
        """Return the prepared request of the occurrence starting at `start` (epoch ms)."""
        first = self.prepared
        window = Window(start, start + first.request.during.end - first.request.during.start)
        during = {"start": window.start, "end": window.end}
        shown = {"start": to_datetime(window.start).isoformat(), "end": to_datetime(window.end).isoformat()}
        kept = {k: v for k, v in first.extra["input"].items() if k not in ("duration", "idempotencyKey")}
        return dataclasses.replace(
            first,
            core={**first.core, "during": during},
            request=dataclasses.replace(first.request, during=window),
            extra={**first.extra, "idempotency_key": None, "input": {**kept, "during": shown}},
        )


def prepare_series(
    data: Mapping[str, Any], *, scope: Scope, now: datetime | None = None, config=None
) -> PreparedSeries:
    """Return the series prepared, or refuse it (INVALID_INPUT naming the field, POLICY_LIMIT) before any lock.

    Every path (API, form, `reserve --repeat`, the port) comes here: one validator for all.
    """
    if not isinstance(data, Mapping):
        raise CapacityError(INVALID_INPUT, "the request must be an object")
    if "repeat" not in data:
        raise CapacityError(INVALID_INPUT, "repeat is required for a series")
    repeat = parse_repeat(data["repeat"])
    all_or_nothing = data.get("allOrNothing", False)
    if not isinstance(all_or_nothing, bool):
        raise CapacityError(INVALID_INPUT, "allOrNothing must be true or false")
    if "wait" in data:
        raise CapacityError(INVALID_INPUT, "wait: a series is placed at once; it takes no wait")
    rest = {k: v for k, v in data.items() if k not in SERIES_FIELDS}
    prepared = prepare(rest, scope=scope, now=now, config=config or placer_config())
    during = prepared.request.during
    starts = expand(repeat, during.start, during.end)
    ready = PreparedSeries(prepared, repeat, all_or_nothing, starts)
    for n, start in enumerate(starts[1:], start=2):
        try:
            before_lock(ready.occurrence(start).request, prepared.pool, prepared.now)
        except CapacityError as err:
            at = to_datetime(start).strftime("%Y-%m-%d %H:%M")
            raise CapacityError(err.code, f"{err.message} (occurrence {n}, {at} UTC)") from None
    return ready


def reserve_series(
    data: Mapping[str, Any],
    *,
    scope: Scope = EVERYONE,
    admission: Any = None,
    now: datetime | None = None,
    config=None,
    by: str = "",
) -> SeriesResult:
    """Create a series and place each occurrence; the same idempotency key answers the first series.

    With allOrNothing, raise SeriesNotPlaced (nothing written) when any occurrence would not place.
    """
    ready = prepare_series(data, scope=scope, now=now, config=config)
    prepared = ready.prepared
    occurrences = [ready.occurrence(start) for start in ready.starts]
    if admission is not None:
        # Each occurrence is a request of its own to admit hooks; a refusal refuses the series.
        for one in occurrences:
            run_admit(prepared.config.plugins, one.request, admission)
    _ask_outside_check(ready, scope, admission)
    return _create(ready, occurrences, by)


def _ask_outside_check(ready: PreparedSeries, scope: Scope, admission: Any) -> None:
    """Ask the pool's outside check once for the whole series, before any lock (POLICY_LIMIT if it
    refuses): it is sent the request as the caller sent it, repeat and allOrNothing included."""
    prepared = ready.prepared
    key = prepared.extra["idempotency_key"]
    if key is not None and Series.objects.filter(tenant=prepared.tenant, idempotency_key=key).exists():
        return  # a replay: the series was asked about when it was made
    sent = {
        **prepared.extra["input"],
        "repeat": ready.repeat.as_input(),
        "allOrNothing": ready.all_or_nothing,
    }
    consult_outside(dataclasses.replace(prepared, extra={**prepared.extra, "input": sent}), scope, admission)


@retry_on_conflict
def _create(ready: PreparedSeries, occurrences: list[Prepared], by: str) -> SeriesResult:
    """Write the series and place its occurrences in one transaction (or answer a replayed key)."""
    prepared = ready.prepared
    key = prepared.extra["idempotency_key"]
    stored = {k: v for k, v in prepared.extra["input"].items() if k != "idempotencyKey"}
    with transaction.atomic():
        existing = _replayed(prepared, key, ready, stored)
        if existing is not None:
            return existing
        try:
            with transaction.atomic():
                series = Series.objects.create(
                    tenant=prepared.tenant,
                    pool_id=prepared.pool.pk,
                    rule=ready.repeat.rule_text(),
                    repeat=ready.repeat.as_input(),
                    request=stored,
                    starts_at=to_datetime(prepared.request.during.start),
                    ends_at=to_datetime(prepared.request.during.end),
                    all_or_nothing=ready.all_or_nothing,
                    idempotency_key=key,
                    created_by=by[:150],
                )
        except IntegrityError:
            # The key's unique index waited for a concurrent request with it: answer its series.
            existing = _replayed(prepared, key, ready, stored)
            if existing is not None:
                return existing
            raise CapacityError(
                IDEMPOTENCY_IN_FLIGHT, f"idempotency key {key} is in use by a request in flight"
            ) from None
        # Placed inline whichever placer the site runs (the module docstring says why).
        config = dataclasses.replace(prepared.config, placer=INLINE)
        planner: Planner | None = None
        answers: list[Occurrence] = []
        booked: list[Reservation] = []
        for one in occurrences:
            one = dataclasses.replace(one, config=config)
            reservation, outcome, planner = _book_one(one, planner, explain=not ready.all_or_nothing)
            booked.append(reservation)
            answers.append(_answer(reservation, outcome))
        missed = [a for a in answers if a.status != Reservation.Status.PLACED]
        if ready.all_or_nothing and missed:
            raise SeriesNotPlaced([dataclasses.replace(a, reservation_id=None) for a in missed], len(answers))
        # maxFutureGpuHours was checked as each occurrence placed (services.placing), under the
        # tenant's quota lock and counting the occurrences before it: past the limit, none is kept.
        Reservation.objects.filter(pk__in=[r.pk for r in booked]).update(series=series)
    return SeriesResult(series, answers, created=True)


def _book_one(
    one: Prepared, planner: Planner | None, *, explain: bool
) -> tuple[Reservation, Outcome, Planner | None]:
    """Insert, charge and place one occurrence as a single create is; the planner carries on."""
    stage = route(one, planner)
    stage.explain = explain
    fields = reservation_fields(one)
    try:
        reservation = insert_routed(stage, one, fields)
    except CapacityError as err:
        if err.code != QUOTA_EXCEEDED:
            raise
        # Nothing was written: the occurrence waits uncharged, with the quota's reason.
        stage.charged = False
        reservation = insert_routed(stage, one, fields)
        assert reservation is not None
        set_pending(reservation, err.message, QUOTA_EXCEEDED_REASON)
        reservation.save(update_fields=["status", "conditions", "updated_at"])
        return reservation, Outcome("pending", reason=err.message), stage.planner or planner
    assert reservation is not None  # occurrences carry no idempotency key
    return reservation, place_routed(stage), stage.planner


def _answer(reservation: Reservation, outcome: Outcome) -> Occurrence:
    status = reservation.status
    reason = "" if status == Reservation.Status.PLACED else (outcome.reason or reason_of(reservation))
    return Occurrence(reservation.starts_at, status, reservation.pk, reason)


def _replayed(
    prepared: Prepared, key: str | None, ready: PreparedSeries, stored: dict
) -> SeriesResult | None:
    """Return the series an earlier request with this key created; refuse the key given other input."""
    if key is None:
        return None
    existing = Series.objects.filter(tenant=prepared.tenant, idempotency_key=key).first()
    if existing is None:
        return None
    same = (existing.repeat, existing.all_or_nothing, existing.request)
    if same != (ready.repeat.as_input(), ready.all_or_nothing, stored):
        raise CapacityError(
            IDEMPOTENCY_CONFLICT, f"idempotency key {key} was already used for a different request"
        )
    return SeriesResult(existing, occurrences_of(existing), created=False)
