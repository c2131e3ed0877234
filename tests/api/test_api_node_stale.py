"""A node whose own agent stopped reporting goes stale: no new placements, its bookings kept.

lab: node-a and node-b, 4 GPUs each. node-a's agent reports through its own credential.
"""

from datetime import timedelta

from django.utils import timezone
from rest_framework.test import APIClient

from identity.tokens import issue_node_token
from inventory import services as inventory
from inventory.models import NodeReport


def test_a_node_whose_agent_stops_reporting_is_stale_until_it_reports_again(
    as_operator, lab, ask, acme, client_for
):
    agent = APIClient()
    agent.credentials(HTTP_AUTHORIZATION=f"Token {issue_node_token('node-a').key}")
    assert agent.post("/api/v1/nodes/node-a/report", {"labels": {}}, format="json").status_code == 200
    report = NodeReport.objects.get(node__name="node-a")
    assert report.by == "node.node-a" and report.agent_at is not None
    kept = client_for(acme).post("/api/v1/reservations", ask(4), format="json").json()
    assert kept["allocations"][0]["nodeId"] == "node-a"

    # Five minutes and more later, the worker's round marks it stale; node-b never had an agent.
    later = timezone.now() + timedelta(minutes=6)
    assert inventory.mark_stale_nodes(timedelta(minutes=5), later) == ["node-a"]
    assert inventory.mark_stale_nodes(timedelta(minutes=5), later) == []  # once
    node = as_operator.get("/api/v1/nodes/node-a").json()
    assert node["state"] == "stale" and "AgentStale" in node["noScheduleReasons"]
    assert as_operator.get("/api/v1/nodes/node-b").json()["state"] == "schedulable"
    # No new work goes there; what it held stays.
    placed = client_for(acme).post("/api/v1/reservations", ask(4), format="json").json()
    assert placed["allocations"][0]["nodeId"] == "node-b"
    again = as_operator.get(f"/api/v1/reservations/{kept['id']}").json()
    assert again["status"] == "placed" and again["allocations"][0]["nodeId"] == "node-a"
    assert [n["name"] for n in as_operator.get("/api/v1/nodes?state=stale").json()["results"]] == ["node-a"]

    # Its agent reports again: schedulable again.
    agent.post("/api/v1/nodes/node-a/report", {"labels": {}}, format="json")
    assert as_operator.get("/api/v1/nodes/node-a").json()["state"] != "stale"


def test_an_operators_report_never_makes_a_node_able_to_go_stale(as_operator, lab):
    as_operator.post("/api/v1/nodes/node-a/report", {"labels": {}}, format="json")
    report = NodeReport.objects.get(node__name="node-a")
    assert (report.by, report.agent_at) == ("operator", None)
    assert inventory.mark_stale_nodes(timedelta(minutes=5), timezone.now() + timedelta(days=1)) == []
