"""Webhook subscriptions and calendar feeds in the audit: made, changed and removed, never a secret."""

from rest_framework.test import APIClient


def _client(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


def _audit(ops, **query):
    answer = _client(ops).get("/api/v1/audit", query)
    assert answer.status_code == 200
    return answer.json()["results"]


def test_a_subscription_made_rotated_enabled_and_removed_is_in_the_audit(people, receiver):
    from webhooks.models import Subscription

    alice, _bob, ops = people
    client = _client(alice)
    made = client.post(
        "/api/v1/webhooks",
        {"url": receiver.url + "/hook?key=s3cret", "events": ["reservation.placed"]},
        format="json",
        headers={"X-Request-Id": "hook-1"},
    ).json()
    Subscription.objects.filter(pk=made["id"]).update(enabled=False, disabled_reason="failing")
    rotated = client.post(f"/api/v1/webhooks/{made['id']}/rotate-secret").json()
    client.post(f"/api/v1/webhooks/{made['id']}/enable")
    client.delete(f"/api/v1/webhooks/{made['id']}")
    rows = _audit(ops, object=f"webhook:{made['id']}")
    assert [(r["action"], r["actor"]) for r in rows] == [
        ("webhook.delete", "alice"),
        ("webhook.enable", "alice"),
        ("webhook.rotate-secret", "alice"),
        ("webhook.create", "alice"),
    ]
    created = rows[-1]
    assert created["requestId"] == "hook-1" and created["after"]["events"] == ["reservation.placed"]
    # Scheme, host and port alone: a path or query may hold the receiver's own secret.
    assert created["after"]["target"] == "/".join(receiver.url.split("/", 3)[:3])
    assert rows[1]["before"] == {"enabled": False, "disabledReason": "failing"}
    said = str(rows)
    assert "s3cret" not in said and made["secret"] not in said and rotated["secret"] not in said


def test_a_calendar_feed_made_and_rotated_is_in_the_audit_without_its_token(people, client):
    from webhooks.models import CalendarFeed

    alice, _bob, ops = people
    _client(alice).get("/api/v1/calendar")
    client.force_login(alice)
    client.post("/webhooks/", {"action": "rotate-calendar"})
    rows = _audit(ops, object="calendar:alice")
    assert [(r["action"], r["actor"]) for r in rows] == [
        ("calendar-token.rotate", "alice"),
        ("calendar-token.issue", "alice"),
    ]
    assert CalendarFeed.objects.get(owner=alice).token not in str(rows)
