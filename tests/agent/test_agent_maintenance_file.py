"""The agent writes reservations/ID.maintenance while a maintenance window will take that booking's GPUs."""

import json
from datetime import timedelta

from django.db import connection
from django.utils import timezone
from test_berth_agent import book

from maintenance import windows as maintenance


def maintenance_files(agent) -> dict[str, dict]:
    folder = agent.output / "reservations"
    return {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.maintenance"))}


def test_a_booking_a_window_will_take_gets_its_file_and_loses_it_when_the_window_is_cancelled(node_agent):
    agent = node_agent("gpu-h100", "h100-8")
    assert agent.once().returncode == 0
    running = book([{"class": "gpu", "count": 2}])
    start = (timezone.now() + timedelta(hours=2)).replace(second=0, microsecond=0)
    end = start + timedelta(hours=3)
    body = {"nodes": ["gpu-h100"], "start": start.isoformat(), "end": end.isoformat(), "reason": "BIOS"}
    window = maintenance.schedule(body, by="ops").window
    connection.close()  # the live server's threads see it committed
    ran = agent.once()
    assert ran.returncode == 0, ran.stderr
    (told,) = maintenance_files(agent).values()
    assert told == {
        "reservationId": str(running.pk),
        "windowId": window.pk,
        "start": start.isoformat().replace("+00:00", "Z"),
        "end": end.isoformat().replace("+00:00", "Z"),
        "reason": "BIOS",
        "nodes": ["gpu-h100"],
        "message": told["message"],
    }
    assert told["message"].startswith(f"maintenance window {window.pk} on gpu-h100, ")
    assert str(running.pk) in agent.env_files()
    maintenance.cancel(window.pk)
    connection.close()
    assert agent.once().returncode == 0
    assert maintenance_files(agent) == {}
    assert str(running.pk) in agent.env_files()  # the booking keeps its GPUs
