"""Reservations over HTTP: release ends the bookings, twice is harmless, another tenant may not."""

from capacity.models import Reservation


def test_releasing_ends_the_bookings_and_answers_the_released_reservation(as_acme, lab, ask):
    created = as_acme.post("/api/v1/reservations", ask(2), format="json").json()
    response = as_acme.post(f"/api/v1/reservations/{created['id']}/release")
    assert response.status_code == 200
    data = response.json()
    assert data["status"] == "released"
    assert data["releasedAt"] is not None
    assert data["allocations"][0]["releasedAt"] == data["releasedAt"]
    # The GPUs are free again: four fit on node-a.
    assert (
        as_acme.post("/api/v1/capacity/preview", ask(4), format="json").json()["candidates"][0]["nodeId"]
        == "node-a"
    )


def test_releasing_twice_answers_the_released_reservation_again(as_acme, lab, ask):
    created = as_acme.post("/api/v1/reservations", ask(1), format="json").json()
    first = as_acme.post(f"/api/v1/reservations/{created['id']}/release").json()
    again = as_acme.post(f"/api/v1/reservations/{created['id']}/release")
    assert (again.status_code, again.json()) == (200, first)


def test_a_tenant_cannot_release_another_tenants_reservation(as_acme, as_globex, lab, ask):
    theirs = as_globex.post("/api/v1/reservations", ask(1, tenant="globex"), format="json").json()
    response = as_acme.post(f"/api/v1/reservations/{theirs['id']}/release")
    assert response.status_code == 404
    assert response.json() == {"code": "NOT_FOUND", "message": f"no reservation {theirs['id']}"}
    assert Reservation.objects.get(pk=theirs["id"]).status == "placed"


def test_an_operator_releases_any_reservation(as_operator, as_globex, lab, ask):
    theirs = as_globex.post("/api/v1/reservations", ask(1, tenant="globex"), format="json").json()
    assert as_operator.post(f"/api/v1/reservations/{theirs['id']}/release").json()["status"] == "released"
