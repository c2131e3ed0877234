"""The owner's processes on lent GPUs, as its agent reports them: the lent work is taken back at once.

The report goes through the API with the node's own credential; `processOwners` says whose each
GPU process is (a process left out: the agent could not attribute it, so it counts as the owner's).
"""

from datetime import datetime, timedelta

import pytest
from rest_framework.test import APIClient

from capacity.models import Reservation
from capacity.models.reservations import IDLE
from identity.tokens import issue_node_token
from inventory.models import DeviceSample
from policy.models import PoolPolicy


@pytest.fixture
def lent(lent):
    """The API tests' lent booking (acme's idle 2 GPUs on node-a, globex's spot work): (owner id, work id)."""
    owner, work = lent
    assert work["lentFrom"] == {"reservations": [], "others": 1}
    return owner, work["id"]


@pytest.fixture
def agent(lent):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {issue_node_token('node-a').key}")
    return client


def report(agent, pids, owners=None):
    """Report node-a's two GPUs, GPU i running the processes pids[i]; `owners` pid -> reservation."""
    devices = [
        {
            "uuid": f"GPU-node-a-{i}",
            "utilization": {"gpuPercent": 40, "processes": [{"pid": p, "usedMiB": 1024} for p in listed]},
        }
        for i, listed in enumerate(pids)
    ]
    sent = {"devices": devices}
    if owners is not None:
        sent["processOwners"] = [{"pid": pid, "reservationId": rid} for pid, rid in owners.items()]
    return agent.post("/api/v1/nodes/node-a/report", sent, format="json")


def state(pk):
    reservation = Reservation.objects.get(pk=pk)
    return reservation.status, reservation.conditions


def test_the_lent_works_own_processes_take_nothing_back(lent, agent):
    owner, work = lent
    answer = report(agent, [[100], [200]], {100: work, 200: str(work)})
    assert answer.status_code == 200, answer.json()
    assert state(work)[0] == "placed"
    assert sorted(DeviceSample.objects.values_list("process_owners", flat=True)) == [[work], [work]]
    assert Reservation.objects.get(pk=owner).condition(IDLE) is not None


def test_the_owners_process_takes_the_lent_work_back_before_the_report_answers(lent, agent):
    owner, work = lent
    assert report(agent, [[100], [200]], {100: work, 200: owner}).status_code == 200
    status, [condition] = state(work)
    assert status == "preempted"
    assert (condition["reason"], condition["cause"]) == ("ReclaimedByOwner", "processes")
    assert condition["message"].startswith("reclaimed: the owner's processes showed up on the lent GPUs")
    assert Reservation.objects.get(pk=owner).condition(IDLE) is None
    feed = agent.get("/api/v1/nodes/node-a/assignments").json()
    assert [d["lent"] for d in feed["devices"]] == [None, None]
    assert {d["now"]["reservationId"] for d in feed["devices"]} == {owner}


def test_a_process_the_agent_could_not_attribute_counts_as_the_owners(lent, agent):
    _owner, work = lent
    assert report(agent, [[100], [200, 300]], {100: work, 200: work}).status_code == 200
    assert state(work)[0] == "preempted"
    assert sorted(DeviceSample.objects.values_list("process_owners", flat=True)) == [[0, work], [work]]


def test_a_report_without_process_owners_reclaims_nothing_as_before(lent, agent):
    _owner, work = lent
    assert report(agent, [[100], [200]]).status_code == 200
    assert state(work)[0] == "placed"
    assert list(DeviceSample.objects.values_list("process_owners", flat=True)) == [None, None]


def test_with_a_spot_notice_the_owners_process_gives_the_lent_work_notice_once(lent, agent):
    owner, work = lent
    PoolPolicy.objects.filter(pool__slug="lab-pool").update(spot_notice=timedelta(minutes=10))
    assert report(agent, [[100], [200]], {200: owner}).status_code == 200
    status, conditions = state(work)
    assert status == "placed"
    [notice] = [c for c in conditions if c["type"] == "PreemptAt"]
    assert notice["reason"] == "ReclaimedByOwner" and notice["message"].endswith("(spotNotice 10m)")
    assert Reservation.objects.get(pk=owner).condition(IDLE) is None
    # The owner's GPUs are shared until preemptAt: its agent (and the spot work's) read when.
    feed = agent.get("/api/v1/nodes/node-a/assignments").json()
    at = {d["lent"]["preemptAt"] for d in feed["devices"]}
    assert len(at) == 1 and datetime.fromisoformat(at.pop()) == datetime.fromisoformat(notice["at"])
    # The next report still shows the owner's process: no second notice.
    assert report(agent, [[100], [200]], {200: owner}).status_code == 200
    assert state(work) == ("placed", conditions)


@pytest.mark.parametrize(
    ("owners", "message"),
    [
        ({"pid": 1}, 'processOwners: must be a list of {"pid", "reservationId"}'),
        ([{"pid": -1, "reservationId": 1}], "processOwners[0].pid: must be a process id (0 to 2147483647)"),
        ([{"pid": 1, "reservationId": 0}], "processOwners[0].reservationId: must be a reservation id"),
        ([{"pid": 1, "reservationId": "a b"}], "processOwners[0].reservationId: must be a reservation id"),
        ([{"pid": 1, "reservationId": 2, "cgroup": "x"}], "processOwners[0].cgroup: unknown field"),
        ([{"pid": 1, "reservationId": 2}] * 2, "processOwners[1].pid: process 1 is listed twice"),
        ([{"pid": n, "reservationId": 2} for n in range(4097)], "processOwners: 4097 entries; at most 4096"),
    ],
)
def test_malformed_process_owners_are_400_and_write_nothing(lent, agent, owners, message):
    _owner, work = lent
    devices = [{"uuid": "GPU-node-a-0", "utilization": {"gpuPercent": 5, "processes": [{"pid": 1}]}}]
    answer = agent.post(
        "/api/v1/nodes/node-a/report", {"devices": devices, "processOwners": owners}, format="json"
    )
    assert answer.status_code == 400
    assert answer.json()["code"] == "INVALID_INPUT"
    assert answer.json()["message"].startswith(message)
    assert not DeviceSample.objects.exists()
    assert state(work)[0] == "placed"
