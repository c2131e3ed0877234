"""The webhooks page: create (the secret shown once), errors at their field, test, the log, delete."""

import re

from django.test import Client

from webhooks.deliver import run_once
from webhooks.models import Subscription


def signed_in(user):
    client = Client()
    client.force_login(user)
    return client


def test_a_tenant_creates_a_webhook_tests_it_and_reads_the_log(people, receiver):
    alice, _bob, _ops = people
    client = signed_in(alice)
    page = client.get("/webhooks/")
    assert page["Vary"] and "You have no webhooks yet." in page.text
    assert 'value="node.cordoned"' not in page.text  # node events are operators'
    made = client.post(
        "/webhooks/",
        {"action": "create", "url": receiver.url, "events": ["reservation.placed", "reservation.released"]},
    )
    hook = Subscription.objects.get(owner=alice)
    assert re.search(r'<code class="token-key">(whsec_[^<]+)</code>', made.text).group(1) == hook.secret
    assert hook.secret not in client.get("/webhooks/").text  # once
    client.post("/webhooks/", {"action": "test", "webhook": hook.pk})
    run_once()
    assert receiver.types() == ["webhook.test"]
    html = client.get("/webhooks/").text
    row = re.search(r"<tr>\s*<td><code>webhook.test</code>.*?</tr>", html, re.S).group(0)
    assert "✓ delivered" in row and '<code class="small">ok</code>' in row
    client.post("/webhooks/", {"action": "delete", "webhook": hook.pk})
    assert not Subscription.objects.exists()


def test_a_bad_url_is_shown_at_its_field_and_the_form_keeps_what_was_typed(people, receiver):
    alice, _bob, ops = people
    answer = signed_in(alice).post(
        "/webhooks/",
        {
            "action": "create",
            "url": "ftp://files.lab/x",
            "events": ["reservation.placed"],
            "description": "nightly",
        },
    )
    assert (
        '<span class="field-error" id="id_url-error" role="alert">url: only http and https URLs</span>'
        in answer.text
    )
    assert 'value="nightly"' in answer.text and 'value="reservation.placed" checked' in answer.text
    assert not Subscription.objects.exists()
    nothing = signed_in(alice).post("/webhooks/", {"action": "create", "url": receiver.url})
    assert 'id="id_events-error"' in nothing.text
    assert 'value="node.cordoned"' in signed_in(ops).get("/webhooks/").text


def test_another_users_webhook_cannot_be_touched_from_the_page(people, receiver):
    alice, bob, _ops = people
    signed_in(alice).post(
        "/webhooks/", {"action": "create", "url": receiver.url, "events": ["reservation.placed"]}
    )
    hook = Subscription.objects.get()
    answer = signed_in(bob).post("/webhooks/", {"action": "delete", "webhook": hook.pk})
    assert f"no webhook {hook.pk}" in answer.text
    assert Subscription.objects.filter(pk=hook.pk).exists()
