"""The pool page's Shares and Policy sections kept in the cache: fresh after every write, per viewer.

Transactional: the booking version is bumped as a transaction commits, as a request's does.
"""

from datetime import timedelta

import pytest
from django.utils import timezone

from capacity import services
from capacity.models import Reservation
from inventory.models import Pool
from policy.pool_policy import set_policy
from policy.shares import delete_share, holding_changes_at, set_share

POOL = "/pools/lab-pool/"
pytestmark = pytest.mark.django_db(transaction=True)


def section(html: str, name: str) -> str:
    start = html.index(f'<section id="{name}"')
    return html[start : html.index("</section>", start)]


def test_a_share_set_and_removed_shows_at_once_to_the_operator_and_to_the_tenant(two_hosts, op, alice):
    for client in (op, alice, op, alice):  # kept now
        assert 'id="share-acme"' not in section(client.get(POOL).text, "shares")
    set_share("lab-pool", "acme", 3, None, None)
    assert 'id="share-acme"' in section(op.get(POOL).text, "shares")
    assert 'id="share-acme"' in section(alice.get(POOL).text, "shares")
    delete_share("lab-pool", "acme")
    assert 'id="share-acme"' not in section(op.get(POOL).text, "shares")
    assert 'id="share-acme"' not in section(alice.get(POOL).text, "shares")


def test_a_policy_written_anywhere_shows_at_once(two_hosts, op, alice):
    for client in (op, alice, op, alice):
        assert "the site's defaults" in section(client.get(POOL).text, "policy")
    set_policy("lab-pool", {"max_duration": timedelta(days=3)})
    for client in (op, alice):
        text = section(client.get(POOL).text, "policy")
        assert "set for this pool" in text and "3d" in text


def test_a_tenant_never_reads_the_operators_kept_sections(two_hosts, op, alice):
    set_share("lab-pool", "acme", 3, None, None)
    set_share("lab-pool", "globex", 2, None, None)
    op.get(POOL)
    tenant_view = alice.get(POOL).text
    assert "Set share" not in tenant_view and "Save policy" not in tenant_view
    assert 'id="share-globex"' not in tenant_view
    assert 'id="share-globex"' in op.get(POOL).text


def test_the_bookings_kept_when_idle_are_read_fresh_into_a_kept_policy_section(two_hosts, op, tenant):
    set_policy("lab-pool", {"lend_idle": True})
    op.get(POOL)
    assert '<p class="muted">None.</p>' in section(op.get(POOL).text, "policy")  # kept, empty list
    held = services.reserve(
        {
            "tenantId": "acme",
            "poolId": "lab-pool",
            "devices": [{"class": "gpu", "count": 1}],
            "duration": "1d",
        }
    ).reservation
    op.get(POOL)  # the booking moved the version: kept again, with nobody keeping
    # Keeping when idle writes the reservation alone: no version moves, the list is read anyway.
    Reservation.objects.filter(pk=held.pk).update(keep_when_idle=True)
    assert f'href="/reservations/{held.pk}/">#{held.pk}</a> acme' in section(op.get(POOL).text, "policy")


def test_the_outside_checks_secret_is_shown_once_on_the_page_after_the_redirect(two_hosts, op, monkeypatch):
    monkeypatch.setenv("BERTH_WEBHOOKS_ALLOW_PRIVATE", "1")
    op.get(POOL)
    op.get(POOL)  # kept
    data = {"policy-approvalHold": "", "policy-policyWebhook": "http://127.0.0.1:9/check"}
    assert op.post("/pools/lab-pool/policy/", data).status_code == 302
    secret = Pool.objects.get(slug="lab-pool").policy.policy_webhook_secret
    assert secret in op.get(POOL).text
    assert secret not in op.get(POOL).text


def test_what_the_pool_holds_next_changes_at_the_first_start_or_end_after_now(two_hosts, tenant):
    pool = Pool.objects.get(slug="lab-pool")
    now = timezone.now()
    assert holding_changes_at(pool, now) is None
    later = services.reserve(
        {
            "tenantId": "acme",
            "poolId": "lab-pool",
            "devices": [{"class": "gpu", "count": 1}],
            "during": {
                "start": int((now + timedelta(hours=2)).timestamp() * 1000),
                "end": int((now + timedelta(hours=5)).timestamp() * 1000),
            },
        }
    ).reservation
    assert holding_changes_at(pool, now) == later.starts_at
    running = services.reserve(
        {
            "tenantId": "acme",
            "poolId": "lab-pool",
            "devices": [{"class": "gpu", "count": 1}],
            "duration": "1h",
        }
    ).reservation
    assert holding_changes_at(pool, timezone.now()) == running.ends_at


def test_a_team_made_or_removed_shows_in_the_share_form_at_once(two_hosts, op):
    from inventory.teams import create_team

    for _ in range(2):  # kept now
        assert 'value="lab3"' not in section(op.get(POOL).text, "shares")
    create_team("lab3", "Lab Three")
    assert '<option value="lab3">lab3</option>' in section(op.get(POOL).text, "shares")
    from inventory.models import Tenant

    Tenant.objects.filter(slug="lab3").delete()
    assert 'value="lab3"' not in section(op.get(POOL).text, "shares")
