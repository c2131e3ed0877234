"""Booked hours per tenant, pool, GPU model and UTC day: kept by triggers, equal to a recount of the bookings.

A random run of bookings (whole GPUs and MIG slices, two tenants, lent GPUs), releases, history
moves, folds and a device renamed, checked at every step against an exact recount in Python, and the
usage report against the same recount split at now, to the GPU-minute.
"""

import random
from collections import defaultdict
from datetime import UTC, date, datetime, time, timedelta
from fractions import Fraction

import pytest
from django.db import connection

from capacity import services
from capacity.access import EVERYONE
from capacity.archive import move_history
from capacity.audit import audit
from capacity.models import AnyAllocation, AnyDeviceBooking, AnyReservation, Reservation
from capacity.models.reservations import IDLE
from inventory.models import Device, Pool, Tenant
from policy.models import PoolPolicy
from usage.booked_hours import booked_hours_drift, fold_booked_hours
from usage.booked_today import booked_to_date
from usage.models import GPU_HOUR, BookedHours, BookedHoursChange
from usage.report import usage_report

from booking import MS, NOW, ask, reserve
from hours import kept, kept_points, recount, recount_points, recount_to_date

DAY = timedelta(days=1)
MINUTE_IN_HOURS = 1 / 60


def split_at(now: datetime, first: date, last: date) -> dict:
    """Return the recount as the report groups it by tenant, pool, model and day: booked, ahead, lent."""
    slugs = dict(Tenant.objects.values_list("pk", "slug"))
    pools = dict(Pool.objects.values_list("pk", "slug"))
    out: dict = defaultdict(lambda: [0.0, 0.0, 0.0])
    for b in AnyDeviceBooking.objects.all():
        reservation = AnyAllocation.objects.get(pk=b.allocation_id).reservation_id
        if reservation is None:
            continue
        r = AnyReservation.objects.get(pk=reservation)
        model, share = b.gpu_model, b.gpu_sevenths / 7
        day = first
        while day <= last:
            lo = max(b.during.lower, datetime.combine(day, time(), tzinfo=UTC))
            hi = min(b.during.upper, datetime.combine(day + DAY, time(), tzinfo=UTC))
            if lo < hi:
                row = out[(slugs[r.tenant_id], pools[r.pool_id], model, day)]
                before = max(timedelta(0), min(hi, now) - lo).total_seconds() / 3600 * share
                row[0] += before
                row[1] += max(timedelta(0), hi - max(lo, now)).total_seconds() / 3600 * share
                row[2] += before if b.layer == 1 else 0.0
            day += DAY
    return dict(out)


def report_at(now: datetime, first: date, last: date) -> dict:
    rows = usage_report(first, last, ["tenant", "pool", "model"], "day", EVERYONE, now=now)
    return {
        (r.keys["tenant"], r.keys["pool"], r.keys["model"], r.bucket.date()): [r.booked, r.ahead, r.lent]
        for r in rows
    }


def assert_report_matches(now: datetime) -> None:
    first, last = (NOW - 3 * DAY).date(), (now + 6 * DAY).date()
    want, have = split_at(now, first, last), report_at(now, first, last)
    assert set(have) == set(want)
    for key, figures in want.items():
        for got, expected in zip(have[key], figures, strict=True):
            assert abs(got - expected) < MINUTE_IN_HOURS / 100, (key, have[key], figures)


@pytest.fixture
def fleet(tenant, other_tenant, make_node):
    """node-a: 4 GPUs named NVIDIA H100; node-b: 2 plain GPUs, the second split into 3g, 3g and 1g slices."""
    make_node("node-a", gpus=4)
    Device.objects.filter(node__name="node-a").update(attributes={"productName": "NVIDIA H100"})
    node = make_node("node-b", gpus=2)
    parent = node.devices.get(index=1)
    for i, kind in enumerate(("mig-3g.40gb", "mig-3g.40gb", "mig-1g.10gb")):
        Device.objects.create(node=node, uuid=f"MIG-b-{i}", device_class=kind, parent=parent, index=10 + i)
    PoolPolicy.objects.update_or_create(pool=Pool.objects.get(slug="lab-pool"), defaults={"lend_idle": True})


def assert_today_exact(now: datetime) -> None:
    """Today's split at now from the rollups equals the recount exactly; the report says it to a float's precision."""
    to_date = recount_to_date(now)
    assert booked_to_date(now) == to_date, now
    today = now.astimezone(UTC).date()
    slugs = dict(Tenant.objects.values_list("pk", "slug"))
    pools = dict(Pool.objects.values_list("pk", "slug"))
    want = {}
    for (tenant, pool, model, day), (booked, _) in kept().items():
        if day == today:
            before, lent = to_date.get((tenant, pool, model), (0, 0))
            want[(slugs[tenant], pools[pool], model)] = (
                Fraction(before, GPU_HOUR),
                booked - Fraction(before, GPU_HOUR),
                Fraction(lent, GPU_HOUR),
            )
    rows = usage_report(today, today, ["tenant", "pool", "model"], "day", EVERYONE, now=now)
    have = {(r.keys["tenant"], r.keys["pool"], r.keys["model"]): (r.booked, r.ahead, r.lent) for r in rows}
    assert set(have) == set(want), now
    for key, figures in want.items():
        for got, expected in zip(have[key], figures, strict=True):
            assert got == pytest.approx(float(expected), rel=1e-12, abs=1e-12), (now, key, have[key], figures)


def nows_around(now: datetime, rng: random.Random) -> list[datetime]:
    """Return instants to split at: random ones, each booking's bounds and a µs either side, hours, midnights."""
    bounds = [x for b in AnyDeviceBooking.objects.all() for x in (b.during.lower, b.during.upper) if x]
    picks = rng.sample(bounds, min(6, len(bounds)))
    out = [p + timedelta(microseconds=d) for p in picks for d in (-1, 0, 1)]
    out += [
        now + timedelta(seconds=rng.randint(-86_400, 3 * 86_400), microseconds=rng.randint(0, 999_999))
        for _ in range(4)
    ]
    midnight = datetime.combine(now.astimezone(UTC).date(), time(), tzinfo=UTC)
    return [
        *out,
        midnight,
        midnight + timedelta(hours=rng.randint(1, 23)),
        midnight + DAY - timedelta(microseconds=1),
    ]


def at_ms(moment: datetime) -> int:
    return int((moment - NOW).total_seconds() * 1000) + MS


def test_one_booking_over_three_days_is_cut_at_utc_midnights_and_a_release_cuts_it(fleet, tenant):
    """
    NOW is 12:00 on 2 December. Two H100s from 18:00 for 36 h: 2 × 6 h on the 2nd, 2 × 24 h on
    the 3rd, 2 × 6 h on the 4th. Released on the 3rd at 06:00: 12 h and 12 h.
    """
    placed = reserve(ask(2, start=6, hours=36)).reservation
    day = NOW.date()
    rows = {(k[2], k[3]): v[0] for k, v in kept().items()}
    assert rows == {
        ("NVIDIA H100", day): 12,
        ("NVIDIA H100", day + DAY): 48,
        ("NVIDIA H100", day + 2 * DAY): 12,
    }
    services.release(placed.pk, now=NOW + timedelta(hours=18))
    rows = {(k[2], k[3]): v[0] for k, v in kept().items()}
    assert rows == {("NVIDIA H100", day): 12, ("NVIDIA H100", day + DAY): 12}
    assert fold_booked_hours().rows == 3  # the third day's row came to nothing and went
    assert BookedHours.objects.count() == 2 and not BookedHoursChange.objects.exists()
    assert kept() == recount()


def test_a_mig_slice_counts_its_compute_slices_over_seven(fleet, tenant):
    slices = {**ask(1, hours=7), "devices": [{"class": "mig-3g.40gb", "count": 2}]}
    reserve(slices)
    assert sum(b for b, _ in kept().values()) == Fraction(2 * 3 * 7, 7)  # 2 slices × 3/7 × 7 h
    assert kept() == recount()


def test_a_history_move_changes_no_figure(fleet, tenant):
    placed = reserve(ask(1, hours=5)).reservation
    services.release(placed.pk, now=NOW + timedelta(hours=2))
    before = kept()
    moved = move_history(NOW + 40 * DAY)
    assert (moved.bookings, moved.allocations, moved.reservations) == (1, 1, 1)
    assert kept() == before == recount()


def models_booked() -> dict[str, Fraction]:
    models = defaultdict(Fraction)
    for (_, _, model, _), (booked, _) in kept().items():
        models[model] += booked
    return dict(models)


def test_a_device_renamed_keeps_its_past_hours_under_the_model_it_had_when_booked(fleet, tenant):
    """A node report that renames a GPU moves nobody's booked hours: only bookings made after it name the new model."""
    reserve(ask(4, hours=3))
    Device.objects.filter(node__name="node-a", index=0).update(attributes={"productName": "NVIDIA H200"})
    assert models_booked() == {"NVIDIA H100": 12}
    reserve(ask(4, start=30, hours=2))
    assert models_booked() == {"NVIDIA H100": 12 + 6, "NVIDIA H200": 2}
    assert kept() == recount()
    assert kept_points() == recount_points()
    assert booked_hours_drift() == []
    by_model = defaultdict(float)
    for r in usage_report(NOW.date(), (NOW + 3 * DAY).date(), ["model"], "day", EVERYONE, now=NOW):
        by_model[r.keys["model"]] += r.booked + r.ahead
    assert dict(by_model) == {"NVIDIA H100": pytest.approx(18), "NVIDIA H200": pytest.approx(2)}
    fold_booked_hours()
    assert models_booked() == {"NVIDIA H100": 18, "NVIDIA H200": 2}


def test_a_model_name_longer_than_the_rollup_keeps_is_cut_at_200_in_the_rollup_and_the_report(fleet, tenant):
    """A node may name its GPUs at any length (found by the stored-attributes property test)."""
    long_name = "NVIDIA H100 " + "x" * 5000
    Device.objects.filter(node__name="node-a").update(attributes={"productName": long_name})
    reserve(ask(4, hours=3))
    assert {k[2] for k in kept()} == {long_name[:200]}
    assert kept() == recount()
    fold_booked_hours()
    assert kept() == recount()


def test_the_audit_reports_booked_hours_that_disagree_with_the_bookings(fleet, tenant):
    reserve(ask(1, hours=2))
    fold_booked_hours()
    BookedHours.objects.update(booked=3 * GPU_HOUR)
    model = BookedHours.objects.get().gpu_model
    assert booked_hours_drift() == [
        f"booked hours {tenant.pk}/{Pool.objects.get().pk}/{model}/{NOW.date()}:"
        " stored 3.000000 h (0.000000 lent), bookings sum to 2.000000 h (0.000000 lent)"
    ]
    BookedHours.objects.update(booked=2 * GPU_HOUR)
    assert audit() == []


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_the_rollup_equals_a_recount_over_random_bookings_releases_slices_lending_and_moves(fleet, seed):
    rng = random.Random(seed)
    now = NOW
    placed: list[int] = []
    for step in range(40):
        now += timedelta(
            minutes=rng.randint(0, 300), seconds=rng.randint(0, 59), microseconds=rng.randint(0, 999)
        )
        op = rng.choice(["book", "book", "book", "slices", "release", "lend", "move", "fold"])
        if op in ("book", "slices"):
            start = now + timedelta(minutes=rng.randint(0, 2000), milliseconds=rng.randint(0, 999))
            hours = rng.randint(1, 60)
            data = ask(rng.randint(1, 2), tenant=rng.choice(["acme", "globex"]))
            if op == "slices":
                data["devices"] = [{"class": rng.choice(["mig-3g.40gb", "mig-1g.10gb"]), "count": 1}]
            data["during"] = {"start": at_ms(start), "end": at_ms(start) + hours * 3_600_000}
            answer = reserve(data, now=now).reservation
            if answer.status == "placed":
                placed.append(answer.pk)
        elif op == "release" and placed:
            services.release(placed.pop(rng.randrange(len(placed))), now=now)
        elif op == "lend":
            running = Reservation.objects.filter(
                pk__in=placed, starts_at__lte=now, ends_at__gt=now + timedelta(hours=2), priority="regular"
            ).first()
            if running is not None:
                idle = {"type": IDLE, "status": "True", "reason": "LowUtilization", "message": "0 %"}
                Reservation.objects.filter(pk=running.pk).update(conditions=[idle])
                tenant = "globex" if running.tenant.slug == "acme" else "acme"
                data = ask(1, tenant=tenant, priority="spot")
                data["during"] = {"start": at_ms(now), "end": at_ms(now) + 3_600_000}
                answer = reserve(data, now=now).reservation
                if answer.status == "placed":
                    placed.append(answer.pk)
        elif op == "move":
            move_history(now, after=timedelta(hours=rng.randint(1, 30)))
        elif op == "fold":
            fold_booked_hours()
        assert kept() == recount(), f"step {step}: {op}"
        assert kept_points() == recount_points(), f"step {step}: {op}"
        if step % 5 == 4:
            for at in nows_around(now, random.Random(seed * 100 + step)):  # the run's own draws unchanged
                assert_today_exact(at)
    lent = sum((v[1] for v in kept().values()), Fraction(0))
    Device.objects.filter(node__name="node-b", index=0).update(attributes={"productName": "NVIDIA L4"})
    assert kept() == recount()
    assert kept_points() == recount_points()
    assert_report_matches(now)
    fold_booked_hours()
    assert kept_points() == recount_points()
    assert_report_matches(now)
    for at in nows_around(now, random.Random(seed)):
        assert_today_exact(at)
    assert_report_matches(now + timedelta(hours=rng.randint(1, 48)))
    assert audit() == []
    # Lent hours are counted exactly when spot work ran on lent GPUs; seed 1's run lends (2 GPU-hours).
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM capacity_devicebooking_all WHERE layer = 1")
        assert (cur.fetchone()[0] > 0) == (lent > 0)
    assert seed != 1 or lent == 2


def test_a_worker_round_folds_the_changes_once_a_minute(fleet, tenant, monkeypatch):
    from capacity import worker
    from capacity.conf import placer_config
    from usage import jobs

    reserve(ask(2, hours=30))
    monkeypatch.setattr(jobs, "_hours_folded", [float("-inf")])  # a fold is due now
    worker.run_round(placer_config())
    assert not BookedHoursChange.objects.exists() and BookedHours.objects.count() == 2
    reserve(ask(1, hours=2))
    worker.run_round(placer_config())  # within the minute: the change waits, the figures are whole
    assert BookedHoursChange.objects.count() == 1
    assert kept() == recount()


def test_a_device_deleted_after_its_bookings_moved_to_history_keeps_its_booked_hours(fleet, tenant):
    """Its bookings kept what they held and their model: the hours booked stay booked, under that model."""
    placed = reserve(ask(4, hours=5)).reservation
    services.release(placed.pk, now=NOW + timedelta(hours=2))
    move_history(NOW + 40 * DAY)
    Device.objects.filter(node__name="node-a", index=3).delete()
    assert models_booked() == {"NVIDIA H100": 4 * 2}
    assert kept() == recount()
    assert booked_hours_drift() == []
