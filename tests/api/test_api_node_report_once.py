"""A node report is one write: the devices, the note of the report and a cleared AgentStale commit
together, and capacity's rollups are refreshed once for all of it.

lab: node-a and node-b, 4 NVLinked GPUs each, in lab-pool; node-a's GPU 3 unhealthy, node-a stale.
"""

from datetime import timedelta

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from test_api_node_credentials import as_node
from test_api_node_trust import gpu, report

from inventory import services as inventory
from inventory.models import Device, NodeCondition, NodeReport

ROLLUP_COMPUTE = "AS total"  # in the statement that recomputes a pool's rollups (capacity.rollups)


def _stale_node_with_an_unhealthy_gpu(client):
    assert report(client, labels={}).status_code == 200
    Device.objects.filter(uuid="GPU-node-a-3").update(healthy=False)
    later = timezone.now() + timedelta(minutes=6)
    assert inventory.mark_stale_nodes(timedelta(minutes=5), later) == ["node-a"]


def test_a_report_that_heals_a_gpu_and_ends_staleness_refreshes_the_rollups_once(lab):
    client, _ = as_node("node-a")
    _stale_node_with_an_unhealthy_gpu(client)
    with CaptureQueriesContext(connection) as statements:
        answer = report(client, [gpu(i) for i in range(4)])
    assert answer.status_code == 200, answer.json()
    assert answer.json()["becameHealthy"] == 1
    assert not NodeCondition.objects.filter(node__name="node-a", type="AgentStale").exists()
    assert NodeReport.objects.get(node__name="node-a").agent_at is not None
    refreshes = [q["sql"] for q in statements.captured_queries if ROLLUP_COMPUTE in q["sql"]]
    assert len(refreshes) == 1


def test_a_refused_report_neither_notes_the_report_nor_ends_staleness(lab):
    client, _ = as_node("node-a")
    _stale_node_with_an_unhealthy_gpu(client)
    noted = NodeReport.objects.get(node__name="node-a").agent_at
    answer = report(client, [gpu(0, index="zero")])
    assert answer.status_code == 400
    assert NodeCondition.objects.filter(node__name="node-a", type="AgentStale").exists()
    assert NodeReport.objects.get(node__name="node-a").agent_at == noted
