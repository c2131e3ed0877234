"""bench_reports: agents' reports through the whole request path; a repeated report writes nothing."""

import io
import json

from django.core.management import call_command

from inventory.models import Device


def test_a_second_round_of_agent_reports_writes_nothing_and_keeps_the_generation(db):
    out = io.StringIO()
    call_command("bench_reports", nodes=3, rounds=2, stdout=out, stderr=io.StringIO())
    figures = json.loads(out.getvalue().splitlines()[-1])
    first, second = figures["rounds"]
    assert figures["devicesStored"] == 24 == Device.objects.filter(node__pool__slug="bench-reports").count()
    assert first["generationBumped"] is True and first["inventoryWritesPerReport"] > 0
    assert second["generationBumped"] is False and second["inventoryWritesPerReport"] == 0
    assert 0 < second["statementsPerReport"] < first["statementsPerReport"]
    assert "round 2: 3 reports" in out.getvalue()
