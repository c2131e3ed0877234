"""The agent writes reservations/ID.idle while Berth marks a reservation Idle, and removes it once it is not."""

from datetime import timedelta

from django.db import connection
from django.utils import timezone
from test_berth_agent import book

from capacity.models import Reservation
from policy.pool_policy import set_policy


def mark(reservation, condition):
    Reservation.objects.filter(pk=reservation.pk).update(conditions=condition, updated_at=timezone.now())
    connection.close()


def test_an_idle_reservation_gets_its_idle_file_with_when_it_goes_and_loses_it_when_busy(node_agent):
    agent = node_agent("gpu-h100", "h100-8")
    assert agent.once().returncode == 0
    set_policy("lab-pool", {"idle_release_after": timedelta(hours=1)})
    held, busy = book([{"class": "gpu", "count": 2}]), book([{"class": "gpu", "count": 2}])
    since = timezone.now().replace(microsecond=0)
    evidence = "gpu-h100 GPU 0–1 at 0 % mean since 10:00 UTC"
    mark(
        held,
        [
            {
                "type": "Idle",
                "status": "True",
                "reason": "LowUtilization",
                "message": evidence,
                "since": since.isoformat(),
            }
        ],
    )
    ran = agent.once()
    assert ran.returncode == 0, ran.stderr
    assert sorted(agent.env_files()) == sorted([str(held.pk), str(busy.pk)])
    assert agent.idle_files() == {
        str(held.pk): {
            "reservationId": str(held.pk),
            "since": since.isoformat().replace("+00:00", "Z"),
            "message": evidence,
            "keepWhenIdle": False,
            "releaseAt": (since + timedelta(hours=1)).isoformat().replace("+00:00", "Z"),
        }
    }
    mark(held, [])
    assert agent.once().returncode == 0
    assert agent.idle_files() == {}
    assert sorted(agent.env_files()) == sorted([str(held.pk), str(busy.pk)])
