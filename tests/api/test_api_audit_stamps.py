"""Who acts reaches the reservation trigger on every path: queued outside a transaction, and a drain."""

from datetime import UTC, datetime, timedelta

from django.db import connection


def _rows(client, pk):
    answer = client.get("/api/v1/audit", {"object": f"reservation:{pk}"})
    return [(r["action"], r["actor"], r["requestId"]) for r in answer.json()["results"]]


def test_a_queued_booking_committed_on_its_own_names_the_user_and_leaves_the_connection_unnamed(
    transactional_db, as_operator, as_acme, lab, ask, settings
):
    from capacity.conf import placer_config
    from capacity.placers.batch import place_queued

    settings.CAPACITY = {**settings.CAPACITY, "PLACER": "pool-lease"}
    body = {**ask(1), "wait": {"timeoutMs": 0}}
    pk = as_acme.post(
        "/api/v1/reservations", body, format="json", headers={"X-Request-Id": "queue-1"}
    ).json()["id"]
    with connection.cursor() as cur:
        cur.execute("SELECT current_setting('berth.actor', true), current_setting('berth.request_id', true)")
        assert cur.fetchone() == ("", "")  # the next request on this connection is not named for this one
    assert place_queued(placer_config()).placed == [pk]
    assert _rows(as_operator, pk) == [
        ("reservation.placed", "system", None),
        ("reservation.pending", "acme", "queue-1"),
    ]


def test_a_drain_names_the_operator_on_the_bookings_it_moves(as_operator, as_acme, lab, ask):
    start = datetime.now(UTC) + timedelta(days=3)
    later = {
        **{k: v for k, v in ask(1).items() if k != "duration"},
        "during": {"start": start.isoformat(), "end": (start + timedelta(hours=2)).isoformat()},
    }
    booked = as_acme.post("/api/v1/reservations", later, format="json").json()
    node = booked["allocations"][0]["nodeId"]
    drained = as_operator.post(
        f"/api/v1/nodes/{node}/drain",
        {"reason": "bad fan"},
        format="json",
        headers={"X-Request-Id": "drain-1"},
    )
    assert drained.json()["moved"] == [booked["id"]]
    moved = _rows(as_operator, booked["id"])[0]
    assert moved[1:] == ("operator", "drain-1")
