"""The `Idempotency-Key` header means exactly what the body's idempotencyKey means.

lab: node-a and node-b, 4 GPUs each, in lab-pool.
"""

import pytest

from capacity.models import Reservation

pytestmark = pytest.mark.django_db


def create(client, body, key=None):
    headers = {} if key is None else {"HTTP_IDEMPOTENCY_KEY": key}
    return client.post("/api/v1/reservations", body, format="json", **headers)


def test_two_posts_with_the_same_header_make_one_reservation(as_acme, lab, ask):
    first = create(as_acme, ask(1), key="job-1")
    again = create(as_acme, ask(1), key="job-1")
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["id"] == first.json()["id"]
    assert Reservation.objects.count() == 1
    assert Reservation.objects.get().idempotency_key == "job-1"


def test_the_header_and_the_body_key_are_the_same_key(as_acme, lab, ask):
    first = create(as_acme, ask(1), key="job-1")
    by_body = create(as_acme, ask(1, idempotencyKey="job-1"))
    both = create(as_acme, ask(1, idempotencyKey="job-1"), key="job-1")
    assert (first.status_code, by_body.status_code, both.status_code) == (201, 200, 200)
    assert {r.json()["id"] for r in (first, by_body, both)} == {first.json()["id"]}
    assert Reservation.objects.count() == 1


def test_the_header_with_other_input_is_an_idempotency_conflict(as_acme, lab, ask):
    create(as_acme, ask(1), key="job-1")
    response = create(as_acme, ask(2), key="job-1")
    assert response.status_code == 409
    assert response.json()["code"] == "IDEMPOTENCY_CONFLICT"
    assert Reservation.objects.count() == 1


def test_a_header_and_a_body_key_that_differ_are_invalid_input_naming_both(as_acme, lab, ask):
    response = create(as_acme, ask(1, idempotencyKey="job-2"), key="job-1")
    assert response.status_code == 400
    assert response.json() == {
        "code": "INVALID_INPUT",
        "message": "the Idempotency-Key header ('job-1') and the body's idempotencyKey ('job-2') "
        "differ: send the key once, or the same in both",
    }
    assert not Reservation.objects.exists()


@pytest.mark.parametrize("key", ["", "no spaces", "x" * 201])
def test_a_malformed_header_is_invalid_input_naming_the_header(as_acme, lab, ask, key):
    response = create(as_acme, ask(1), key=key)
    assert response.status_code == 400
    assert response.json()["code"] == "INVALID_INPUT"
    assert response.json()["message"].startswith("the Idempotency-Key header must be 1 to 200 letters")
    assert not Reservation.objects.exists()


@pytest.mark.parametrize("path", ["/api/v1/capacity/preview", "/api/v1/capacity/earliest"])
def test_the_preview_and_earliest_check_the_header_as_they_check_the_body_key(as_acme, lab, ask, path):
    assert as_acme.post(path, ask(1), format="json", HTTP_IDEMPOTENCY_KEY="job-1").status_code == 200
    response = as_acme.post(path, ask(1, idempotencyKey="job-2"), format="json", HTTP_IDEMPOTENCY_KEY="job-1")
    assert (response.status_code, response.json()["code"]) == (400, "INVALID_INPUT")
    assert not Reservation.objects.exists()
