"""A tenant's quota over a window, over HTTP: the peak held at once against each limit."""

from datetime import UTC, datetime, timedelta

from capacity.models import Quota


def window(start_hours, hours):
    now = datetime.now(UTC).replace(microsecond=0)
    start = now + timedelta(hours=start_hours)
    return {
        "start": int(start.timestamp() * 1000),
        "end": int((start + timedelta(hours=hours)).timestamp() * 1000),
    }


def test_a_tenant_reads_its_peak_use_against_each_limit(as_acme, lab, ask, tenant):
    Quota.objects.create(tenant=tenant, resource="gpu", limit=8)
    for start, gpus in ((1, 2), (3, 3), (30, 4)):
        data = {k: v for k, v in ask(gpus).items() if k != "duration"} | {"during": window(start, 4)}
        response = as_acme.post("/api/v1/reservations", data, format="json")
        assert response.status_code == 201, response.json()
    day = window(0, 24)
    response = as_acme.get(f"/api/v1/tenants/acme/quota?start={day['start']}&end={day['end']}")
    assert response.status_code == 200
    body = response.json()
    assert body["tenantId"] == "acme"
    assert body["quota"] == [
        {"resource": "gpu", "limit": 8, "peak": 5, "now": 0, "default": False},
        {"resource": "*", "limit": 1_000_000, "peak": 0, "now": 0, "default": True},
    ]
    # The default window is the week from now: the 4 GPUs on day two are in it, not at once with the rest.
    assert as_acme.get("/api/v1/tenants/acme/quota").json()["quota"][0]["peak"] == 5


def test_quota_of_another_tenant_is_not_found_and_bad_windows_are_refused(
    as_acme, as_operator, lab, other_tenant
):
    response = as_acme.get("/api/v1/tenants/globex/quota")
    assert (response.status_code, response.json()["code"]) == (404, "NOT_FOUND")
    assert as_operator.get("/api/v1/tenants/globex/quota").status_code == 200
    response = as_acme.get("/api/v1/tenants/acme/quota?start=2026-12-05T00:00Z&end=2026-12-04T00:00Z")
    assert response.json() == {"code": "INVALID_INPUT", "message": "end must be after start"}
    response = as_acme.get("/api/v1/tenants/acme/quota?start=tomorrow")
    assert response.status_code == 400 and response.json()["code"] == "INVALID_INPUT"
