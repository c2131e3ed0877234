"""Series over the API (docs/series.md): one reservation per occurrence, placed or pending with its
reason; allOrNothing; bad rules refused before anything is written; release one or the rest.

lab: node-a and node-b, 4 NVLinked GPUs each, in lab-pool.
"""

import math
from datetime import UTC, datetime, timedelta

import pytest

from capacity.models import DeviceBooking, Reservation, Series

# Reads the real clock (weekdays, next Monday): also run at fixed days by `make test-dates`.
pytestmark = pytest.mark.dates

RESERVATIONS = "/api/v1/reservations"
POLICY = "/api/v1/pools/lab-pool/policy"


def next_monday(hour: int = 9, weeks: int = 1) -> datetime:
    """Return a Monday at `hour` UTC at least a day ahead (plus `weeks` - 1 weeks)."""
    today = datetime.now(UTC).replace(hour=hour, minute=0, second=0, microsecond=0)
    days = (7 - today.weekday()) % 7 or 7
    return today + timedelta(days=days, weeks=weeks - 1)


def series_body(gpus=1, start=None, length=timedelta(hours=3), repeat=None, **extra) -> dict:
    start = start or next_monday()
    return {
        "tenantId": "acme",
        "poolId": "lab-pool",
        "devices": [{"class": "gpu", "count": gpus}],
        "during": {"start": start.isoformat(), "end": (start + length).isoformat()},
        "repeat": repeat or {"freq": "weekly", "byDay": ["MO", "WE"], "count": 4},
        **extra,
    }


def fill_both_nodes(client, start: datetime) -> None:
    """Book all 8 GPUs of lab-pool (4 on each node) for the 3 hours from `start`."""
    taken = series_body(gpus=4, start=start)
    del taken["repeat"]
    for _ in range(2):
        assert client.post(RESERVATIONS, taken, format="json").json()["status"] == "placed"


def test_a_weekly_series_books_one_placed_reservation_per_occurrence(as_acme, lab, tenant):
    answer = as_acme.post(RESERVATIONS, series_body(), format="json")
    assert answer.status_code == 201, answer.json()
    series = answer.json()["series"]
    assert series["rule"] == "FREQ=WEEKLY;BYDAY=MO,WE;COUNT=4"
    starts = [datetime.fromisoformat(o["start"]) for o in series["occurrences"]]
    monday = next_monday()
    assert starts == [
        monday,
        monday + timedelta(days=2),
        monday + timedelta(days=7),
        monday + timedelta(days=9),
    ]
    assert {o["status"] for o in series["occurrences"]} == {"placed"}
    ids = [o["reservationId"] for o in series["occurrences"]]
    for pk in ids:
        one = as_acme.get(f"{RESERVATIONS}/{pk}").json()
        assert one["seriesId"] == series["id"] and one["status"] == "placed"
        assert datetime.fromisoformat(one["end"]) - datetime.fromisoformat(one["start"]) == timedelta(hours=3)
    assert (
        as_acme.get(f"/api/v1/series/{series['id']}").json()["series"]["occurrences"] == series["occurrences"]
    )


def test_an_occurrence_that_does_not_fit_is_pending_with_its_reason_and_the_others_place(
    as_acme, lab, tenant
):
    second = next_monday() + timedelta(days=2)
    fill_both_nodes(as_acme, second)
    series = as_acme.post(RESERVATIONS, series_body(), format="json").json()["series"]
    statuses = [o["status"] for o in series["occurrences"]]
    assert statuses == ["placed", "pending", "placed", "placed"]
    assert series["occurrences"][1]["reason"].startswith("no node fits (2 nodes)")
    pending = Reservation.objects.get(pk=series["occurrences"][1]["reservationId"])
    assert pending.condition("Unschedulable")["message"] == series["occurrences"][1]["reason"]


def test_all_or_nothing_lists_every_occurrence_that_would_not_place_and_books_nothing(as_acme, lab, tenant):
    second = next_monday() + timedelta(days=2)
    fill_both_nodes(as_acme, second)
    before = set(DeviceBooking.objects.values_list("pk", flat=True))
    answer = as_acme.post(RESERVATIONS, series_body(allOrNothing=True), format="json")
    assert answer.status_code == 409, answer.json()
    body = answer.json()
    assert body["code"] == "SERIES_NOT_PLACED"
    assert body["message"] == "allOrNothing: 1 of 4 occurrences would not place; nothing was booked"
    assert [datetime.fromisoformat(o["start"]) for o in body["occurrences"]] == [second]
    assert body["occurrences"][0]["reason"].startswith("no node fits")
    assert not Series.objects.exists() and Reservation.objects.count() == 2
    assert set(DeviceBooking.objects.values_list("pk", flat=True)) == before
    # With room for every occurrence, allOrNothing books them all.
    answer = as_acme.post(
        RESERVATIONS,
        series_body(allOrNothing=True, repeat={"freq": "weekly", "byDay": ["MO"], "count": 3}),
        format="json",
    )
    assert answer.status_code == 201 and len(answer.json()["series"]["occurrences"]) == 3


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"repeat": {"freq": "weekly", "byDay": [], "count": 4}}, "repeat.byDay must name at least one day"),
        ({"repeat": {"freq": "weekly", "count": 4}}, "repeat.byDay must name at least one day"),
        ({"repeat": {"freq": "weekly", "byDay": [None], "count": 4}}, "repeat.byDay: 'None' is not a day"),
        ({"repeat": {"freq": "weekly", "byDay": ["MO"], "count": 0}}, "repeat.count must be from 1 to 200"),
        ({"repeat": {"freq": "daily", "count": 201}}, "repeat.count must be from 1 to 200"),
        ({"repeat": {"freq": "daily", "until": "2020-01-01"}}, "repeat.until must not be before the first"),
        ({"repeat": {"freq": "monthly", "count": 2}}, "repeat.freq must be daily or weekly"),
        ({"repeat": {"freq": "daily"}}, "repeat: give count or until"),
        ({"repeat": {"freq": "daily", "count": 2, "until": "2099-01-01"}}, "repeat: give count or until"),
        (
            {"repeat": {"freq": "weekly", "byDay": ["TU"], "count": 2}},
            "repeat.byDay: the first window starts on a MO",
        ),
        (
            {"repeat": {"freq": "daily", "count": 2}, "length": timedelta(days=2)},
            "during: each window must end",
        ),
        (
            {"repeat": {"freq": "weekly", "byDay": ["MO"], "count": 60}},
            "repeat.count: a series spans at most 366",
        ),
        ({"length": -timedelta(hours=1)}, "during must be a non-empty window"),
        ({"allOrNothing": "yes"}, "allOrNothing must be true or false"),
    ],
)
def test_a_bad_rule_or_window_is_400_naming_the_field_and_books_nothing(
    as_acme, lab, tenant, change, message
):
    change = dict(change)
    body = series_body(length=change.pop("length", timedelta(hours=3)), **change)
    answer = as_acme.post(RESERVATIONS, body, format="json")
    assert answer.status_code == 400, answer.json()
    assert answer.json()["code"] == "INVALID_INPUT"
    assert answer.json()["message"].startswith(message), answer.json()
    assert not Series.objects.exists() and not Reservation.objects.exists()


def test_until_over_200_occurrences_is_refused(as_acme, lab, tenant):
    body = series_body(
        repeat={"freq": "daily", "until": (next_monday() + timedelta(days=300)).date().isoformat()}
    )
    answer = as_acme.post(RESERVATIONS, body, format="json")
    assert answer.json() == {
        "code": "INVALID_INPUT",
        "message": "repeat.until: a series has at most 200 occurrences; this rule makes more",
    }


def test_the_pool_limits_apply_to_every_occurrence(as_operator, as_acme, lab, tenant):
    # The third occurrence is within maxLeadTime, the fourth (two days later) is not, whatever
    # the weekday: the limit is the third's lead rounded up to whole days.
    third, fourth = next_monday() + timedelta(days=7), next_monday() + timedelta(days=9)
    lead_days = math.ceil((third - datetime.now(UTC)) / timedelta(days=1))
    as_operator.put(POLICY, {"maxLeadTime": f"{lead_days}d"}, format="json")
    answer = as_acme.post(RESERVATIONS, series_body(), format="json")
    assert answer.status_code == 422, answer.json()
    assert answer.json()["message"].startswith(f"maxLeadTime is {lead_days}d; this starts in ")
    assert answer.json()["message"].endswith(f"(occurrence 4, {fourth:%Y-%m-%d %H:%M} UTC)")
    assert not Reservation.objects.exists()
    # maxFutureGpuHours counts every occurrence: 4 × 2 GPUs × 3 h = 24 GPU-hours.
    as_operator.put(POLICY, {"maxLeadTime": None, "maxFutureGpuHours": 20}, format="json")
    answer = as_acme.post(RESERVATIONS, series_body(gpus=2), format="json")
    assert (
        answer.status_code == 422
        and answer.json()["message"] == "maxFutureGpuHours is 20; acme would hold 24"
    )
    assert not Reservation.objects.exists() and not Series.objects.exists()
    assert as_acme.post(RESERVATIONS, series_body(gpus=1), format="json").status_code == 201


def test_releasing_one_occurrence_leaves_the_others_and_the_series_release_ends_the_rest(
    as_acme, lab, tenant
):
    series = as_acme.post(RESERVATIONS, series_body(), format="json").json()["series"]
    first, *rest = [o["reservationId"] for o in series["occurrences"]]
    assert as_acme.post(f"{RESERVATIONS}/{first}/release").json()["status"] == "released"
    assert set(Reservation.objects.filter(pk__in=rest).values_list("status", flat=True)) == {"placed"}
    answer = as_acme.post(f"/api/v1/series/{series['id']}/release")
    assert answer.status_code == 200, answer.json()
    assert answer.json()["released"] == rest
    assert {o["status"] for o in answer.json()["series"]["occurrences"]} == {"released"}
    assert as_acme.post(f"/api/v1/series/{series['id']}/release").json()["released"] == []


def test_the_idempotency_key_answers_the_first_series_and_refuses_other_input(as_acme, lab, tenant):
    first = as_acme.post(RESERVATIONS, series_body(idempotencyKey="term-1"), format="json")
    again = as_acme.post(RESERVATIONS, series_body(idempotencyKey="term-1"), format="json")
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["series"] == first.json()["series"]
    assert Reservation.objects.count() == 4
    for other in (series_body(gpus=2), series_body(allOrNothing=True)):
        again = as_acme.post(RESERVATIONS, {**other, "idempotencyKey": "term-1"}, format="json")
        assert again.status_code == 409 and again.json()["code"] == "IDEMPOTENCY_CONFLICT"
    header = as_acme.post(RESERVATIONS, series_body(), format="json", HTTP_IDEMPOTENCY_KEY="term-1")
    assert header.status_code == 200 and header.json()["series"]["id"] == first.json()["series"]["id"]


def test_another_tenants_series_is_not_found(as_acme, as_globex, lab, tenant, other_tenant):
    series = as_acme.post(RESERVATIONS, series_body(), format="json").json()["series"]
    assert as_globex.get(f"/api/v1/series/{series['id']}").status_code == 404
    assert as_globex.post(f"/api/v1/series/{series['id']}/release").status_code == 404
    assert as_acme.get("/api/v1/series/999999").json()["code"] == "NOT_FOUND"


def test_an_occurrence_past_the_quota_waits_pending_with_the_quotas_reason(as_acme, lab, tenant):
    from capacity.models import Quota

    Quota.objects.create(tenant=tenant, resource="gpu", limit=4)
    second = next_monday() + timedelta(days=2)
    taken = series_body(gpus=4, start=second)
    del taken["repeat"]
    assert as_acme.post(RESERVATIONS, taken, format="json").json()["status"] == "placed"
    answer = as_acme.post(RESERVATIONS, series_body(gpus=2), format="json")
    assert answer.status_code == 201, answer.json()
    occurrences = answer.json()["series"]["occurrences"]
    assert [o["status"] for o in occurrences] == ["placed", "pending", "placed", "placed"]
    pending = Reservation.objects.get(pk=occurrences[1]["reservationId"])
    assert pending.condition("Unschedulable")["reason"] == "QuotaExceeded"
    assert occurrences[1]["reason"] == pending.condition("Unschedulable")["message"]


def test_a_series_places_at_once_under_the_pool_lease_placer_and_leases_whole_nodes(
    as_acme, lab, tenant, settings
):
    settings.CAPACITY = {**settings.CAPACITY, "PLACER": "pool-lease"}
    answer = as_acme.post(RESERVATIONS, series_body(), format="json")
    assert [o["status"] for o in answer.json()["series"]["occurrences"]] == ["placed"] * 4
    body = series_body(binding="node", repeat={"freq": "daily", "count": 2})
    del body["devices"]
    answer = as_acme.post(RESERVATIONS, body, format="json")
    assert answer.status_code == 201, answer.json()
    leases = Reservation.objects.filter(series_id=answer.json()["series"]["id"])
    assert [r.status for r in leases] == ["placed", "placed"] and {r.binding for r in leases} == {"node"}


def test_preview_reads_the_first_occurrence_and_all_or_nothing_alone_is_refused(as_acme, lab, tenant):
    preview = as_acme.post("/api/v1/capacity/preview", series_body(), format="json")
    assert preview.status_code == 200 and preview.json()["fits"] is True
    body = series_body(allOrNothing=True)
    del body["repeat"]
    answer = as_acme.post(RESERVATIONS, body, format="json")
    assert answer.json() == {"code": "INVALID_INPUT", "message": "repeat is required for a series"}
    assert not Reservation.objects.exists()


def test_list_rows_carry_the_series_id_of_an_occurrence_and_null_for_a_plain_booking(as_acme, lab, tenant):
    series = as_acme.post(RESERVATIONS, series_body(), format="json").json()["series"]
    plain = series_body(start=next_monday(weeks=3))
    del plain["repeat"]
    single = as_acme.post(RESERVATIONS, plain, format="json").json()
    rows = {r["id"]: r["seriesId"] for r in as_acme.get(RESERVATIONS).json()["results"]}
    assert rows == {o["reservationId"]: series["id"] for o in series["occurrences"]} | {single["id"]: None}
    assert as_acme.get(f"{RESERVATIONS}/{single['id']}").json()["seriesId"] is None
