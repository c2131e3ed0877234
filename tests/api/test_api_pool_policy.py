"""A pool's policy over the API: everyone who may use the pool reads it, operators change the fields they name."""

from datetime import timedelta

import pytest

from capacity.models import Reservation
from policy.models import PoolPolicy

POLICY = "/api/v1/pools/lab-pool/policy"
DEFAULTS = {
    "idleWarnAfter": "2h",
    "idleReleaseAfter": None,
    "allowKeepWhenIdle": True,
    "lendIdle": False,
    "spotNotice": None,
    "spotMinRuntime": None,
    "maxDuration": None,
    "maxLeadTime": None,
    "maxFutureGpuHours": None,
    "approvalAboveGpuHours": None,
    "approvalHold": "1d",
    "policyWebhook": None,
    "policyWebhookOnError": "deny",
    "policyWebhookConcurrency": None,
}


@pytest.fixture(autouse=True)
def site_idle_settings(settings):
    settings.IDLE_AFTER, settings.IDLE_RELEASE_AFTER = timedelta(hours=2), None


def test_a_pool_without_a_policy_reads_the_site_defaults_and_has_no_row(as_acme, lab, tenant):
    response = as_acme.get(POLICY)
    assert response.status_code == 200, response.json()
    assert response.json() == DEFAULTS
    assert not PoolPolicy.objects.exists()


def test_a_put_changes_only_the_fields_it_names_starting_from_the_defaults(as_operator, as_acme, lab, tenant):
    response = as_operator.put(POLICY, {"idleReleaseAfter": "4h", "lendIdle": True}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json() == {**DEFAULTS, "idleReleaseAfter": "4h", "lendIdle": True}
    second = as_operator.put(POLICY, {"idleWarnAfter": "90m", "spotNotice": "10m"}, format="json")
    assert second.json() == {
        **DEFAULTS,
        "idleWarnAfter": "90m",
        "idleReleaseAfter": "4h",
        "lendIdle": True,
        "spotNotice": "10m",
    }
    row = PoolPolicy.objects.get()
    assert (row.idle_warn_after, row.idle_release_after, row.spot_notice) == (
        timedelta(minutes=90),
        timedelta(hours=4),
        timedelta(minutes=10),
    )
    # Null is off; the tenant reads what the operator wrote.
    as_operator.put(POLICY, {"idleReleaseAfter": None, "spotMinRuntime": "1d"}, format="json")
    assert as_acme.get(POLICY).json() == {
        **DEFAULTS,
        "idleWarnAfter": "90m",
        "lendIdle": True,
        "spotNotice": "10m",
        "spotMinRuntime": "1d",
    }


def test_a_tenant_may_read_but_not_write_and_a_pool_it_may_not_use_is_404(
    as_acme, as_globex, lab, tenant, globex_pool
):
    response = as_acme.put(POLICY, {"lendIdle": True}, format="json")
    assert (response.status_code, response.json()["code"]) == (403, "FORBIDDEN")
    assert not PoolPolicy.objects.exists()
    for answer in (
        as_acme.get("/api/v1/pools/globex-pool/policy"),
        as_acme.put("/api/v1/pools/globex-pool/policy", {}, format="json"),
    ):
        assert (answer.status_code, answer.json()["code"]) == (404, "NOT_FOUND")
    assert as_globex.get("/api/v1/pools/globex-pool/policy").status_code == 200


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"idleWarnAfter": "-2h"}, "idleWarnAfter"),
        ({"idleWarnAfter": "0h"}, "idleWarnAfter"),
        ({"idleReleaseAfter": "2 hours"}, "idleReleaseAfter"),
        ({"idleReleaseAfter": 7200}, "idleReleaseAfter"),
        ({"spotNotice": "400d"}, "spotNotice"),
        ({"spotMinRuntime": "h"}, "spotMinRuntime"),
        ({"allowKeepWhenIdle": "yes"}, "allowKeepWhenIdle"),
        ({"lendIdle": None}, "lendIdle"),
        ({"idleWarnAfter": "1h", "maxDuration": "3 days"}, "maxDuration"),
        ({"maxLeadTime": "0d"}, "maxLeadTime"),
        ({"maxFutureGpuHours": 0}, "maxFutureGpuHours"),
        ({"maxFutureGpuHours": "100"}, "maxFutureGpuHours"),
        ({"maxFutureGpuHours": 1.5}, "maxFutureGpuHours"),
        ({"maxFutureGpuHours": True}, "maxFutureGpuHours"),
        ({"maxWhatever": 1}, "maxWhatever"),
    ],
)
def test_bad_policy_input_is_400_naming_the_field_and_writes_nothing(as_operator, lab, tenant, body, field):
    response = as_operator.put(POLICY, body, format="json")
    assert response.status_code == 400
    said = response.json()
    assert said["code"] == "INVALID_INPUT" and field in said["message"], said
    assert not PoolPolicy.objects.exists()


def test_keep_when_idle_on_create_and_by_patch_where_the_pool_allows_it(
    as_operator, as_acme, lab, tenant, ask
):
    created = as_acme.post("/api/v1/reservations", ask(gpus=1, keepWhenIdle=True), format="json")
    assert created.status_code == 201, created.json()
    assert created.json()["keepWhenIdle"] is True
    assert Reservation.objects.get(pk=created.json()["id"]).keep_when_idle
    other = as_acme.post("/api/v1/reservations", ask(gpus=1), format="json").json()
    assert other["keepWhenIdle"] is False
    patched = as_acme.patch(f"/api/v1/reservations/{other['id']}", {"keepWhenIdle": True}, format="json")
    assert (patched.status_code, patched.json()["keepWhenIdle"]) == (200, True)
    assert as_acme.get(f"/api/v1/reservations/{other['id']}").json()["keepWhenIdle"] is True
    off = as_acme.patch(f"/api/v1/reservations/{other['id']}", {"keepWhenIdle": False}, format="json")
    assert off.json()["keepWhenIdle"] is False


def test_keep_when_idle_where_the_pool_forbids_it_is_400_naming_the_policy(
    as_operator, as_acme, lab, tenant, ask
):
    held = as_acme.post("/api/v1/reservations", ask(gpus=1), format="json").json()
    as_operator.put(POLICY, {"allowKeepWhenIdle": False}, format="json")
    said = "keepWhenIdle: pool lab-pool does not allow keeping idle bookings"
    created = as_acme.post("/api/v1/reservations", ask(gpus=1, keepWhenIdle=True), format="json")
    assert created.status_code == 400 and created.json()["message"].startswith(said), created.json()
    assert Reservation.objects.count() == 1
    patched = as_acme.patch(f"/api/v1/reservations/{held['id']}", {"keepWhenIdle": True}, format="json")
    assert patched.status_code == 400 and patched.json()["message"].startswith(said)
    assert not Reservation.objects.get(pk=held["id"]).keep_when_idle
    # Turning it off is always allowed.
    assert (
        as_acme.patch(
            f"/api/v1/reservations/{held['id']}", {"keepWhenIdle": False}, format="json"
        ).status_code
        == 200
    )


def test_a_patch_changes_nothing_else_and_another_tenants_booking_is_404(
    as_acme, as_globex, lab, tenant, other_tenant, ask
):
    held = as_acme.post("/api/v1/reservations", ask(gpus=1), format="json").json()
    url = f"/api/v1/reservations/{held['id']}"
    for body, field in (
        ({"duration": "2d"}, "duration"),
        ({"keepWhenIdle": "yes"}, "keepWhenIdle"),
        ({}, "keepWhenIdle"),
    ):
        response = as_acme.patch(url, body, format="json")
        assert (response.status_code, response.json()["code"]) == (400, "INVALID_INPUT")
        assert field in response.json()["message"]
    response = as_globex.patch(url, {"keepWhenIdle": True}, format="json")
    assert (response.status_code, response.json()["code"]) == (404, "NOT_FOUND")
    bad = as_acme.post("/api/v1/reservations", ask(gpus=1, keepWhenIdle="yes"), format="json")
    assert bad.status_code == 400 and "keepWhenIdle" in bad.json()["message"]
