"""A pool policy's booking limits over the API: set and read, and a booking past one is POLICY_LIMIT."""

from datetime import UTC, datetime, timedelta

import pytest

from capacity.models import DeviceBooking, Reservation
from policy.models import PoolPolicy

POLICY = "/api/v1/pools/lab-pool/policy"


@pytest.fixture(autouse=True)
def site_idle_settings(settings):
    settings.IDLE_AFTER, settings.IDLE_RELEASE_AFTER = timedelta(hours=2), None


def window(start_in: timedelta, length: timedelta) -> dict:
    start = datetime.now(UTC).replace(microsecond=0) + start_in
    return {"start": start.isoformat(), "end": (start + length).isoformat()}


def test_the_limits_are_set_read_and_cleared_each_alone(as_operator, as_acme, lab, tenant):
    response = as_operator.put(
        POLICY, {"maxDuration": "7d", "maxLeadTime": "30d", "maxFutureGpuHours": 1000}, format="json"
    )
    assert response.status_code == 200, response.json()
    said = as_acme.get(POLICY).json()
    assert (said["maxDuration"], said["maxLeadTime"], said["maxFutureGpuHours"]) == ("1w", "30d", 1000)
    row = PoolPolicy.objects.get()
    assert (row.max_duration, row.max_lead_time, row.max_future_gpu_hours) == (
        timedelta(days=7),
        timedelta(days=30),
        1000,
    )
    # A PUT changes only what it names; null is no limit.
    as_operator.put(POLICY, {"maxLeadTime": None}, format="json")
    said = as_acme.get(POLICY).json()
    assert (said["maxDuration"], said["maxLeadTime"], said["maxFutureGpuHours"]) == ("1w", None, 1000)


def test_a_booking_longer_than_max_duration_is_policy_limit_and_writes_nothing(
    as_operator, as_acme, lab, tenant, ask
):
    as_operator.put(POLICY, {"maxDuration": "7d"}, format="json")
    response = as_acme.post("/api/v1/reservations", ask(gpus=1, duration="8d"), format="json")
    assert response.status_code == 422, response.json()
    assert response.json() == {"code": "POLICY_LIMIT", "message": "maxDuration is 7d; this asks 8d"}
    assert not Reservation.objects.exists() and not DeviceBooking.objects.exists()
    assert as_acme.post("/api/v1/reservations", ask(gpus=1, duration="7d"), format="json").status_code == 201


def test_a_booking_starting_past_max_lead_time_is_policy_limit_and_writes_nothing(
    as_operator, as_acme, lab, tenant, ask
):
    as_operator.put(POLICY, {"maxLeadTime": "30d"}, format="json")
    body = ask(gpus=1)
    del body["duration"]
    response = as_acme.post(
        "/api/v1/reservations",
        {**body, "during": window(timedelta(days=45), timedelta(days=1))},
        format="json",
    )
    assert response.status_code == 422, response.json()
    assert response.json() == {"code": "POLICY_LIMIT", "message": "maxLeadTime is 30d; this starts in 45d"}
    assert not Reservation.objects.exists()
    # Preview answers the same.
    preview = as_acme.post(
        "/api/v1/capacity/preview",
        {**body, "during": window(timedelta(days=45), timedelta(days=1))},
        format="json",
    )
    assert preview.json().get("code") == "POLICY_LIMIT", preview.json()


def test_a_tenant_past_max_future_gpu_hours_is_policy_limit_and_writes_nothing(
    as_operator, as_acme, lab, tenant, ask
):
    as_operator.put(POLICY, {"maxFutureGpuHours": 100}, format="json")
    first = as_acme.post("/api/v1/reservations", ask(gpus=2, duration="2d"), format="json")  # 96 GPU-hours
    assert first.status_code == 201, first.json()
    held = DeviceBooking.objects.count()
    response = as_acme.post("/api/v1/reservations", ask(gpus=1, duration="1d"), format="json")
    assert response.status_code == 422, response.json()
    assert response.json() == {
        "code": "POLICY_LIMIT",
        "message": "maxFutureGpuHours is 100; acme would hold 120",
    }
    assert Reservation.objects.count() == 1 and DeviceBooking.objects.count() == held
    assert as_acme.post("/api/v1/reservations", ask(gpus=1, duration="4h"), format="json").status_code == 201
