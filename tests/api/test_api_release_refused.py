"""A release the caller may not make answers 404 with the spec's code and changes nothing."""

import pytest

from capacity.models import Reservation

RESERVATIONS = "/api/v1/reservations"
BODY = {"tenantId": "acme", "poolId": "lab-pool", "devices": [{"class": "gpu", "count": 1}], "duration": "1h"}


def test_another_tenants_release_is_not_found_and_leaves_the_booking_placed(as_acme, as_globex, lab):
    made = as_acme.post(RESERVATIONS, BODY, format="json").json()
    answer = as_globex.post(f"{RESERVATIONS}/{made['id']}/release")
    assert answer.status_code == 404
    assert answer.json() == {"code": "NOT_FOUND", "message": f"no reservation {made['id']}"}
    assert Reservation.objects.get(pk=made["id"]).status == "placed"
    assert as_acme.post(f"{RESERVATIONS}/{made['id']}/release").json()["status"] == "released"


@pytest.mark.parametrize("rid", ["abc", "99999999999999999999999", "-1", "0"])
def test_a_release_of_an_id_that_names_no_reservation_is_not_found(as_acme, lab, rid):
    answer = as_acme.post(f"{RESERVATIONS}/{rid}/release")
    assert answer.status_code == 404
    assert answer.json() == {"code": "NOT_FOUND", "message": f"no reservation {rid}"}


def test_releasing_twice_answers_the_released_reservation_and_writes_nothing_more(as_acme, lab):
    made = as_acme.post(RESERVATIONS, BODY, format="json").json()
    first = as_acme.post(f"{RESERVATIONS}/{made['id']}/release").json()
    again = as_acme.post(f"{RESERVATIONS}/{made['id']}/release").json()
    assert first["status"] == again["status"] == "released"
    assert again["releasedAt"] == first["releasedAt"]
