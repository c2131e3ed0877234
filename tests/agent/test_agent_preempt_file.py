"""The agent writes reservations/ID.preempt while Berth has given that spot work notice, with the time."""

import json
from datetime import timedelta

from django.db import connection
from django.utils import timezone
from test_berth_agent import book

from capacity.models import Reservation


def preempt_files(agent) -> dict[str, dict]:
    return {
        p.stem: json.loads(p.read_text()) for p in sorted((agent.output / "reservations").glob("*.preempt"))
    }


def test_spot_work_under_notice_gets_its_preempt_file_and_loses_it_without(node_agent):
    agent = node_agent("gpu-h100", "h100-8")
    assert agent.once().returncode == 0
    noticed, other = book([{"class": "gpu", "count": 2}]), book([{"class": "gpu", "count": 2}])
    at = (timezone.now() + timedelta(minutes=10)).replace(microsecond=0)
    condition = {
        "type": "PreemptAt",
        "status": "True",
        "reason": "PreemptedByRegular",
        "message": "preempted at ... (spotNotice 10m)",
        "at": at.isoformat(),
    }
    Reservation.objects.filter(pk=noticed.pk).update(conditions=[condition], updated_at=timezone.now())
    connection.close()
    ran = agent.once()
    assert ran.returncode == 0, ran.stderr
    assert preempt_files(agent) == {
        str(noticed.pk): {
            "reservationId": str(noticed.pk),
            "preemptAt": at.isoformat().replace("+00:00", "Z"),
        }
    }
    assert str(other.pk) in agent.env_files()
    Reservation.objects.filter(pk=noticed.pk).update(conditions=[], updated_at=timezone.now())
    connection.close()
    assert agent.once().returncode == 0
    assert preempt_files(agent) == {}
