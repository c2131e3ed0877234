"""Releasing a series: every occurrence ends as its own release would, in statements flat in their
number, and pending work in the pool gets one retry pass after it (the worker, woken, the rest).

node-a: 2 GPUs in lab-pool; acme's daily series holds both for 2 hours a day, by the real clock
(the retry after the commit reads it).
"""

from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from capacity import services
from capacity.audit import audit
from capacity.models import Allocation, DeviceBooking, QuotaCharge, Reservation, ReservationEvent
from capacity.services.release import RELEASE_RETRY_BATCH
from capacity.worker import run_round
from series.book import reserve_series
from series.release import release_series
from webhooks.models import Event, Subscription

from booking import ask, config, from_real_now


def book_series(occurrences: int, start: int) -> list[int]:
    """Book acme's daily series of 2 GPUs for 2 hours from `start` (hours after NOW); return its ids."""
    data = {**ask(2, start=start, hours=2), "repeat": {"freq": "daily", "count": occurrences}}
    result = reserve_series(data, config=config())
    assert {o.status for o in result.occurrences} == {"placed"}
    return result.series.pk


def wait_beside(day_start: int, days: int) -> list[int]:
    """Book globex one GPU in each of the series' first `days` windows: none fits, each waits."""
    waiting = []
    for day in range(days):
        data = ask(1, tenant="globex", start=day_start + 24 * day, hours=1)
        waiting.append(services.reserve(data, config=config(), now=timezone.now()).reservation.pk)
    assert set(Reservation.objects.filter(pk__in=waiting).values_list("status", flat=True)) == {"pending"}
    return waiting


def placed(pks: list[int]) -> int:
    return Reservation.objects.filter(pk__in=pks, status="placed").count()


def test_a_series_release_ends_every_occurrence_and_gives_the_pending_work_one_pass_then_the_worker(
    tenant, other_tenant, make_node, django_capture_on_commit_callbacks
):
    make_node("node-a", gpus=2)
    start = from_real_now(1)
    series = book_series(12, start)
    waiting = wait_beside(start, RELEASE_RETRY_BATCH + 2)
    with django_capture_on_commit_callbacks(execute=True):
        _series, released = release_series(series)
    occurrences = Reservation.objects.filter(series_id=series)
    assert released == list(occurrences.order_by("starts_at").values_list("pk", flat=True))
    assert set(occurrences.values_list("status", flat=True)) == {"released"}
    assert not DeviceBooking.objects.filter(allocation__reservation__series_id=series).exists()
    assert not Allocation.objects.filter(reservation__series_id=series, released_at__isnull=True).exists()
    assert not QuotaCharge.objects.filter(reservation__series_id=series).exists()
    # One retry pass for the whole series, not one per occurrence (12 would have placed all ten):
    # it placed a batch in the answer.
    assert placed(waiting) == RELEASE_RETRY_BATCH
    # The rest are the worker's (woken by the release): its round places them.
    run_round(config())
    assert placed(waiting) == len(waiting)
    assert audit() == []


def test_each_released_occurrence_writes_its_own_event_and_webhook_outbox_row(
    tenant, make_node, django_capture_on_commit_callbacks
):
    make_node("node-a", gpus=2)
    owner = get_user_model().objects.create_user("ops", password="x")
    Subscription.objects.create(
        owner=owner, url="https://hooks.example.com/b", events=["reservation.released"], secret="whsec_x"
    )
    series = book_series(5, from_real_now(1))
    Event.objects.update(fanned_out=True)  # the series' own events went out before the release
    with django_capture_on_commit_callbacks(execute=True):
        _series, released = release_series(series)
    outbox = Event.objects.filter(type="reservation.released").values_list("reservation_id", "tenant_id")
    assert sorted(outbox) == sorted((pk, tenant.pk) for pk in released)
    history = ReservationEvent.objects.filter(reservation_id__in=released, status="released")
    assert sorted(history.values_list("reservation_id", flat=True)) == sorted(released)
    assert all(e.conditions == [] for e in history)


def test_a_series_release_sends_as_many_statements_for_40_occurrences_as_for_10(
    tenant, make_node, django_capture_on_commit_callbacks
):
    make_node("node-a", gpus=2)
    counts = []
    for occurrences, start in ((10, from_real_now(1)), (40, from_real_now(1) + 24 * 12)):
        series = book_series(occurrences, start)
        with (
            CaptureQueriesContext(connection) as statements,
            django_capture_on_commit_callbacks(execute=True),
        ):
            _series, released = release_series(series)
        assert len(released) == occurrences
        counts.append(len(statements.captured_queries))
    assert counts[0] == counts[1], counts


def test_releasing_a_series_again_releases_nothing_and_leaves_ended_occurrences_as_they_are(
    tenant, make_node, django_capture_on_commit_callbacks
):
    make_node("node-a", gpus=2)
    series = book_series(4, from_real_now(1))
    first = Reservation.objects.filter(series_id=series).order_by("starts_at").first()
    services.release(first.pk)
    with django_capture_on_commit_callbacks(execute=True):
        _series, released = release_series(series)
    assert first.pk not in released and len(released) == 3
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        assert release_series(series)[1] == []
    assert callbacks == []  # nothing released: no retry pass


def test_pending_occurrences_are_released_too_and_free_nothing_to_retry(
    tenant, other_tenant, make_node, django_capture_on_commit_callbacks
):
    """globex holds node-a's GPUs over the series' windows: every occurrence waits."""
    make_node("node-a", gpus=2)
    start = from_real_now(1)
    services.reserve(ask(2, tenant="globex", start=start, hours=24 * 3), config=config(), now=timezone.now())
    data = {**ask(2, start=start, hours=2), "repeat": {"freq": "daily", "count": 3}}
    series = reserve_series(data, config=config()).series.pk
    occurrences = Reservation.objects.filter(series_id=series)
    assert set(occurrences.values_list("status", flat=True)) == {"pending"}
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        release_series(series)
    assert set(occurrences.values_list("status", flat=True)) == {"released"}
    assert not QuotaCharge.objects.filter(reservation__series_id=series).exists()
    assert callbacks == []  # no GPU came free: nothing to retry
