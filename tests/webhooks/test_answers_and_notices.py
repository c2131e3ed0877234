"""What a receiver said is its subscription owner's alone, 200 printable characters of it; a
subscription disabled after 24 hours of failures tells its owner on the page and by mail."""

from datetime import timedelta

from django.utils import timezone
from rest_framework.test import APIClient

from webhooks import services as hooks
from webhooks.deliver import run_once
from webhooks.models import Attempt


def api(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_an_answer_is_kept_and_shown_as_200_printable_characters_to_the_owner_alone(
    lab, people, receiver, book
):
    alice, bob, _ops = people
    sub = hooks.subscribe(alice, {"url": receiver.url, "events": ["reservation.placed"]})
    receiver.answer = b"<html>\n\x00\x07" + b"internal service page " * 200
    book(gpus=1)
    run_once()
    kept = Attempt.objects.get().answer
    assert 190 <= len(kept) <= 200 and kept.isprintable() and kept.startswith("<html> internal service page")
    (shown,) = api(alice).get(f"/api/v1/webhooks/{sub.pk}/deliveries").json()["results"]
    assert shown["tries"][0]["answer"] == kept
    assert api(bob).get(f"/api/v1/webhooks/{sub.pk}/deliveries").status_code == 404
    assert api(_ops).get(f"/api/v1/webhooks/{sub.pk}/deliveries").status_code == 404  # operators too


def test_a_subscription_disabled_after_24_hours_of_failures_mails_its_owner_where_mail_is_configured(
    lab, people, receiver, book, settings, mailoutbox
):
    alice, _bob, _ops = people
    alice.email = "alice@acme.example"
    alice.save()
    settings.MAIL_CONFIGURED = True
    sub = hooks.subscribe(alice, {"url": receiver.url, "events": ["reservation.placed"]})
    receiver.statuses = [500] * 100
    book(gpus=1)
    start = timezone.now()
    run_once(start)
    run_once(start + timedelta(hours=23))
    assert mailoutbox == []
    run_once(start + timedelta(hours=24, minutes=1))
    sub.refresh_from_db()
    assert not sub.enabled
    (notice,) = mailoutbox
    assert (
        notice.to == ["alice@acme.example"] and notice.subject == f"Berth: your webhook {sub.pk} is disabled"
    )
    assert sub.disabled_reason in notice.body and f"/api/v1/webhooks/{sub.pk}/enable" in notice.body


def test_without_mail_the_disabled_subscription_is_said_on_its_page_only(
    lab, people, receiver, book, settings, mailoutbox
):
    alice, _bob, _ops = people
    alice.email = "alice@acme.example"
    alice.save()
    settings.MAIL_CONFIGURED = False
    sub = hooks.subscribe(alice, {"url": receiver.url, "events": ["reservation.placed"]})
    receiver.statuses = [500] * 100
    book(gpus=1)
    start = timezone.now()
    run_once(start)
    run_once(start + timedelta(hours=24, minutes=1))
    assert mailoutbox == []
    client = APIClient()
    client.force_login(alice)
    page = client.get("/webhooks/").content.decode()
    assert f'id="disabled-{sub.pk}"' in page and "every delivery failed since" in page
