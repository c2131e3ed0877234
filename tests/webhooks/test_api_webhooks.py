"""The webhooks API: your own subscriptions only, the secret shown once, a test event, the log."""

import pytest
from rest_framework.test import APIClient
from standardwebhooks import Webhook, WebhookVerificationError

from identity.tokens import issue_node_token
from webhooks.deliver import run_once


@pytest.fixture
def as_user():
    def make(user):
        client = APIClient()
        client.force_authenticate(user)
        return client

    return make


def test_a_subscription_is_made_listed_tested_rotated_and_removed(people, receiver, as_user):
    alice, bob, _ops = people
    client = as_user(alice)
    made = client.post(
        "/api/v1/webhooks",
        {"url": receiver.url, "events": ["reservation.placed"], "description": "launcher"},
        format="json",
    )
    assert made.status_code == 201
    hook = made.json()
    assert hook["secret"].startswith("whsec_") and hook["enabled"] is True
    listed = client.get("/api/v1/webhooks").json()["results"]
    assert [h["id"] for h in listed] == [hook["id"]] and "secret" not in listed[0]
    assert as_user(bob).get("/api/v1/webhooks").json()["results"] == []
    assert as_user(bob).get(f"/api/v1/webhooks/{hook['id']}").status_code == 404

    assert client.post(f"/api/v1/webhooks/{hook['id']}/test").status_code == 202
    run_once()
    (got,) = receiver.got
    assert got.json["type"] == "webhook.test"
    assert Webhook(hook["secret"]).verify(got.body, got.headers)["type"] == "webhook.test"
    log = client.get(f"/api/v1/webhooks/{hook['id']}/deliveries").json()["results"]
    assert log[0]["type"] == "webhook.test" and log[0]["status"] == "delivered"
    assert log[0]["tries"][0]["statusCode"] == 200

    rotated = client.post(f"/api/v1/webhooks/{hook['id']}/rotate-secret").json()
    assert rotated["secret"] != hook["secret"]
    client.post(f"/api/v1/webhooks/{hook['id']}/test")
    run_once()
    Webhook(rotated["secret"]).verify(receiver.got[1].body, receiver.got[1].headers)
    with pytest.raises(WebhookVerificationError):  # the old secret no longer signs
        Webhook(hook["secret"]).verify(receiver.got[1].body, receiver.got[1].headers)

    assert as_user(bob).delete(f"/api/v1/webhooks/{hook['id']}").status_code == 404
    assert client.delete(f"/api/v1/webhooks/{hook['id']}").status_code == 204
    assert client.get("/api/v1/webhooks").json()["results"] == []


@pytest.mark.parametrize(
    ("body", "code", "message"),
    [
        ({"url": "http://x", "events": []}, "INVALID_INPUT", "events: a list of one or more of"),
        (
            {"url": "http://x", "events": ["reservation.eaten"]},
            "INVALID_INPUT",
            "events: reservation.eaten is not one of",
        ),
        (
            {"url": "gopher://x", "events": ["reservation.placed"]},
            "INVALID_INPUT",
            "url: only http and https URLs",
        ),
        ({"events": ["reservation.placed"]}, "INVALID_INPUT", "url: an http or https URL"),
        (
            {"url": "http://x", "events": ["reservation.placed"], "secret": "mine"},
            "INVALID_INPUT",
            "secret: unknown field",
        ),
        (
            {"url": "http://x", "events": ["node.cordoned"]},
            "FORBIDDEN",
            "events: node.cordoned is for operators",
        ),
    ],
)
def test_a_bad_subscription_is_refused_with_the_reason_and_nothing_made(
    people, receiver, as_user, body, code, message
):
    alice, _bob, _ops = people
    body = {**body, "url": body["url"].replace("http://x", receiver.url)} if "url" in body else body
    answer = as_user(alice).post("/api/v1/webhooks", body, format="json")
    assert answer.json()["code"] == code and answer.json()["message"].startswith(message)
    assert answer.status_code in (400, 403)
    assert as_user(alice).get("/api/v1/webhooks").json()["results"] == []


def test_operators_subscribe_to_node_events_and_node_credentials_may_not_subscribe(
    people, receiver, as_user, lab
):
    _alice, _bob, ops = people
    made = as_user(ops).post(
        "/api/v1/webhooks", {"url": receiver.url, "events": ["node.stale"]}, format="json"
    )
    assert made.status_code == 201
    node = APIClient()
    node.credentials(HTTP_AUTHORIZATION=f"Token {issue_node_token('node-a').key}")
    assert node.get("/api/v1/webhooks").status_code == 403
