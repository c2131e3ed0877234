"""The pool page's Policy section: everyone who may use the pool reads it, operators edit it in place."""

from datetime import timedelta

from capacity.models import Reservation
from policy.models import PoolPolicy
from policy.pool_policy import set_policy

HX = {"HTTP_HX_REQUEST": "true"}


def post_policy(client, **fields):
    data = {
        "policy-idleWarnAfter": "2h",
        "policy-idleReleaseAfter": "",
        "policy-allowKeepWhenIdle": "on",
        "policy-spotNotice": "",
        "policy-spotMinRuntime": "",
    }
    data.update({f"policy-{k}": v for k, v in fields.items()})
    return client.post("/pools/lab-pool/policy/", {k: v for k, v in data.items() if v is not None}, **HX)


def test_a_pool_without_a_policy_shows_the_site_defaults_and_only_operators_get_the_form(
    op, alice, two_hosts
):
    for client in (op, alice):
        text = client.get("/pools/lab-pool/").content.decode()
        assert 'id="policy"' in text and "the site's defaults" in text
    assert "Save policy" in op.get("/pools/lab-pool/").content.decode()
    assert "Save policy" not in alice.get("/pools/lab-pool/").content.decode()
    assert alice.post("/pools/lab-pool/policy/", {"policy-idleWarnAfter": "1h"}).status_code in (302, 403)
    assert not PoolPolicy.objects.exists()


def test_an_operator_saves_the_policy_in_place_and_gets_the_section_back(op, two_hosts):
    response = post_policy(op, idleWarnAfter="90m", idleReleaseAfter="4h", lendIdle="on", spotNotice="10m")
    assert response.status_code == 200
    text = response.content.decode()
    assert text.lstrip().startswith('<section id="policy"') and "<html" not in text
    assert "set for this pool" in text and "90m" in text and "4h" in text
    row = PoolPolicy.objects.get()
    assert (row.idle_warn_after, row.idle_release_after, row.lend_idle, row.spot_notice) == (
        timedelta(minutes=90),
        timedelta(hours=4),
        True,
        timedelta(minutes=10),
    )


def test_a_bad_duration_is_shown_next_to_its_field_and_nothing_is_written(op, two_hosts):
    response = post_policy(op, idleReleaseAfter="-2h")
    assert response.status_code == 200
    text = response.content.decode()
    assert "has-error" in text and "idleReleaseAfter must look like 30m" in text
    assert not PoolPolicy.objects.exists()


def test_operators_see_who_keeps_idle_bookings(op, two_hosts, tenant):
    from capacity import services

    held = services.reserve(
        {
            "tenantId": "acme",
            "poolId": "lab-pool",
            "devices": [{"class": "gpu", "count": 1}],
            "duration": "1d",
            "keepWhenIdle": True,
        }
    ).reservation
    set_policy("lab-pool", {"lend_idle": True})
    text = op.get("/pools/lab-pool/").content.decode()
    assert f'href="/reservations/{held.pk}/">#{held.pk}</a> acme' in text
    assert Reservation.objects.get(pk=held.pk).keep_when_idle
    assert "⚓ kept when idle" in op.get(f"/reservations/{held.pk}/").content.decode()


def test_the_booking_form_keeps_a_booking_when_idle_where_the_pool_allows_it(op, two_hosts, tenant):
    base = {"tenant": "acme", "pool": "lab-pool", "count": "1", "device_class": "gpu", "duration": "1d"}
    assert 'name="keep_when_idle"' in op.get("/book/").text
    assert 'name="keep_when_idle"' not in op.get("/preview/").text
    op.post("/book/", {**base, "keep_when_idle": "on", "idempotency_key": "web-a"})
    assert list(Reservation.objects.values_list("keep_when_idle", flat=True)) == [True]
    set_policy("lab-pool", {"allow_keep_when_idle": False})
    html = op.post("/book/", {**base, "keep_when_idle": "on", "idempotency_key": "web-b"}).text
    assert "does not allow keeping idle bookings" in html and "has-error" in html
    assert Reservation.objects.count() == 1


def test_the_owner_keeps_a_booking_when_idle_from_its_page_and_lets_it_go_again(alice, two_hosts, tenant):
    from capacity import services

    held = services.reserve(
        {
            "tenantId": "acme",
            "poolId": "lab-pool",
            "devices": [{"class": "gpu", "count": 1}],
            "duration": "1d",
        }
    ).reservation
    url = f"/reservations/{held.pk}/"
    assert "Keep when idle</button>" in alice.get(url).text
    assert alice.post(f"{url}keep-when-idle/", {"keep": "1"}).status_code == 302
    assert Reservation.objects.get(pk=held.pk).keep_when_idle
    html = alice.get(url).text
    assert "⚓ kept when idle" in html and "Let the pool release it when idle" in html
    set_policy("lab-pool", {"allow_keep_when_idle": False})
    alice.post(f"{url}keep-when-idle/", {"keep": "0"})
    refused = alice.post(f"{url}keep-when-idle/", {"keep": "1"})
    assert refused.status_code == 400 and "does not allow keeping idle bookings" in refused.text
    assert not Reservation.objects.get(pk=held.pk).keep_when_idle


def test_the_admin_takes_durations_as_the_api_writes_them(two_hosts, pool):
    from django.contrib.auth import get_user_model
    from django.test import Client

    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root", password="x"))
    form = {
        "pool": pool.pk,
        "idle_warn_after": "90m",
        "idle_release_after": "-2h",
        "allow_keep_when_idle": "on",
        "spot_notice": "",
        "spot_min_runtime": "",
    }
    response = client.post("/admin/policy/poolpolicy/add/", form)
    assert response.status_code == 200 and "idleReleaseAfter must look like 30m" in response.content.decode()
    assert not PoolPolicy.objects.exists()
    assert (
        client.post("/admin/policy/poolpolicy/add/", form | {"idle_release_after": "6h"}).status_code == 302
    )
    row = PoolPolicy.objects.get()
    assert (row.idle_warn_after, row.idle_release_after, row.spot_notice) == (
        timedelta(minutes=90),
        timedelta(hours=6),
        None,
    )
    page = client.get(f"/admin/policy/poolpolicy/{row.pk}/change/").content.decode()
    assert 'value="90m"' in page and 'value="6h"' in page


def test_an_operator_sets_approvals_and_an_outside_check_and_sees_its_secret_once(op, two_hosts, monkeypatch):
    monkeypatch.setenv("BERTH_WEBHOOKS_ALLOW_PRIVATE", "1")
    url = "http://127.0.0.1:9/check"
    response = post_policy(op, approvalAboveGpuHours="500", approvalHold="", policyWebhook=url)
    assert response.status_code == 200
    text = response.content.decode()
    row = PoolPolicy.objects.get()
    assert (row.approval_above_gpu_hours, row.approval_hold, row.policy_webhook) == (
        500,
        timedelta(hours=24),
        url,
    )
    assert row.policy_webhook_on_error == "deny" and row.policy_webhook_secret.startswith("whsec_")
    assert "500 GPU-hours" in text and "asked on every booking" in text
    assert row.policy_webhook_secret in text  # shown this once
    again = op.get("/pools/lab-pool/").content.decode()
    assert row.policy_webhook_secret not in again


def test_a_bad_outside_check_url_is_shown_next_to_its_field_and_writes_nothing(op, two_hosts):
    response = post_policy(op, policyWebhook="ftp://example.com/check")
    assert response.status_code == 200
    text = response.content.decode()
    assert "has-error" in text and "policyWebhook: only http and https URLs" in text
    assert not PoolPolicy.objects.exists()
