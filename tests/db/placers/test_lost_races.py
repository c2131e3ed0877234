"""Lost races: the guarded commit notices what changed since the plan, and the placer replans.

Another connection changes the pool while the plan is being made (from inside a plugin filter,
which runs after the node views were read), so the commit meets a real concurrent change.
"""

import dataclasses
import threading

import pytest
from django.db import connection, transaction

from capacity import services
from capacity.placement import define_scheduler_plugin, validate_request
from capacity.placers.commit import LostRace, Owner, commit_member
from capacity.placers.loader import load_pool
from capacity.placers.reads import plan_request
from inventory import services as nodes
from inventory.models import Device, NodeLabel, NodeResource
from maintenance.windows import schedule

from booking import NOW, ask, config, from_real_now, iso_at

pytestmark = pytest.mark.django_db(transaction=True)


def in_another_connection(action):
    """Run `action` in a thread with its own connection, committed before this returns."""
    errors = []

    def run():
        try:
            with transaction.atomic():
                action()
        except Exception as err:  # surfaced below, in the test's thread
            errors.append(err)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(30)
    assert not thread.is_alive(), "the other connection is stuck"
    assert not errors, errors


def racer(actions):
    """Return a plugin whose filter runs actions[node] when it sees that node first in a new plan."""
    state = {"last": None, "done": set()}

    def filter_(request, node):
        new_plan = state["last"] is None or node.id <= state["last"]
        state["last"] = node.id
        if new_plan and node.id in actions and node.id not in state["done"]:
            state["done"].add(node.id)
            in_another_connection(actions[node.id])
        return True

    return define_scheduler_plugin("racer", filters=[{"id": "racer", "filter": filter_}])


def steal(node, others):
    def action():
        config_ = config()
        services.reserve(ask(2, tenant="globex", excludeNodes=others), config=config_, now=NOW)

    return action


def racing_config(actions):
    return dataclasses.replace(config(), plugins=(racer(actions),), top_n=1)


def test_a_node_booked_meanwhile_is_excluded_and_the_next_best_takes_the_request(
    tenant, other_tenant, make_node
):
    """
    node-a: [ ][ ]  ← globex books both GPUs while acme's plan is made
    node-b: [ ][ ]
    """
    make_node("node-a", gpus=2)
    make_node("node-b", gpus=2)
    result = services.reserve(ask(2), config=racing_config({"node-a": steal("node-a", ["node-b"])}), now=NOW)
    assert result.reservation.status == "placed"
    assert result.outcome.lost == ["an atom on node-a was booked concurrently"]
    assert services.allocations_of(result.reservation)[0]["nodeId"] == "node-b"


def test_three_lost_races_leave_the_request_pending_with_every_reason(tenant, other_tenant, make_node):
    for name in ("node-a", "node-b", "node-c"):
        make_node(name, gpus=2)

    def break_a_gpu():
        gpu = Device.objects.get(uuid="GPU-node-c-1")
        gpu.healthy = False
        gpu.save()

    actions = {
        "node-a": steal("node-a", ["node-b", "node-c"]),
        "node-b": lambda: nodes.cordon("node-b"),
        "node-c": break_a_gpu,
    }
    result = services.reserve(ask(2), config=racing_config(actions), now=NOW)
    assert result.reservation.status == "pending"
    assert result.outcome.reason == (
        "Unschedulable after 3 conflicting attempts: an atom on node-a was booked concurrently; "
        "node-b is no longer schedulable; an atom on node-c turned unhealthy or unbookable"
    )
    assert result.reservation.condition("Unschedulable")["message"] == result.outcome.reason


def test_a_label_that_went_away_since_the_plan_loses_the_race(tenant, make_node):
    node = make_node("node-a", gpus=2, vcpu=8)
    NodeLabel.objects.create(node=node, key="bc.dev/cap.devices.limits", value="1", source="system")
    request = validate_request(
        {
            **ask(1, resources={"vcpu": 2}),
            "nodeLabels": {"bc.dev/cap.devices.limits": "*"},
            "reservationId": "r",
        }
    )
    pool = load_pool("lab-pool")
    plan, index = plan_request(request, pool, config())
    NodeLabel.objects.filter(node=node).delete()
    with pytest.raises(LostRace) as lost, transaction.atomic():
        commit_member(request, plan.choice, pool, index, Owner(instance_id="vm-1"))
    assert lost.value.reason == "node-a is no longer schedulable"


def test_a_scalar_that_ran_out_since_the_plan_loses_the_race(tenant, make_node):
    make_node("node-a", gpus=2, vcpu=8)
    request = validate_request({**ask(1, resources={"vcpu": 6}), "reservationId": "r"})
    pool = load_pool("lab-pool")
    plan, index = plan_request(request, pool, config())
    NodeResource.objects.filter(resource="vcpu").update(allocatable=4)
    with pytest.raises(LostRace) as lost, transaction.atomic():
        commit_member(request, plan.choice, pool, index, Owner(instance_id="vm-1"))
    assert lost.value.reason == "vcpu on node-a ran out"


def test_a_pool_archived_since_the_plan_answers_pending_and_writes_nothing(tenant, make_node, pool):
    from capacity.models import Allocation, DeviceBooking
    from capacity.placers.inline import place
    from inventory.models import Pool

    make_node("node-a", gpus=2)
    request = validate_request({**ask(1), "reservationId": "r"})
    stale = load_pool("lab-pool")  # read before the archive, as a caller that read it earlier would
    Pool.objects.filter(pk=pool.pk).update(archived=True)
    with transaction.atomic():
        outcome = place(request, "lab-pool", Owner(instance_id="vm-1"), config(), pool=stale)
    assert (outcome.status, outcome.reason) == ("pending", "the pool is archived")
    assert not Allocation.objects.exists() and not DeviceBooking.objects.exists()


def test_a_request_racing_one_in_flight_with_its_idempotency_key_gets_the_first_answer(tenant, make_node):
    """The second insert waits on the key's unique index, then finds the first, committed, reservation."""
    import time

    from capacity.models import Reservation

    from booking import reserve

    make_node("node-a", gpus=2)
    results, errors = [], []

    def second():
        try:
            results.append(reserve(ask(1, idempotencyKey="job-1")))
        except Exception as err:  # surfaced below, in the test's thread
            errors.append(err)
        finally:
            connection.close()

    with transaction.atomic():
        first = reserve(ask(1, idempotencyKey="job-1"))
        thread = threading.Thread(target=second)
        thread.start()
        waited = False
        for _ in range(200):  # until the other connection waits for this one's uncommitted row
            with connection.cursor() as cur:
                cur.execute("SELECT pg_stat_clear_snapshot()")  # else the transaction sees one snapshot
                cur.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
                )
                waited = cur.fetchone()[0] > 0
            if waited:
                break
            time.sleep(0.025)
    thread.join(30)
    assert not errors, errors
    assert waited, "the second request never waited on the first"
    (again,) = results
    assert first.created and not again.created
    assert again.reservation.pk == first.reservation.pk
    assert Reservation.objects.count() == 1


def test_a_maintenance_window_scheduled_meanwhile_loses_the_race_and_the_request_goes_elsewhere(
    tenant, make_node
):
    """
    node-a: [ ][ ]  ← an operator schedules a window over the request while its plan is made
    node-b: [ ][ ]
    """

    make_node("node-a", gpus=2)
    make_node("node-b", gpus=2)
    s = from_real_now(10)

    def window():
        schedule({"nodes": ["node-a"], "start": iso_at(s), "end": iso_at(s + 4)})

    result = services.reserve(ask(2, start=s + 1, hours=2), config=racing_config({"node-a": window}), now=NOW)
    assert result.reservation.status == "placed"
    assert result.outcome.lost == ["node-a is no longer schedulable"]
    assert services.allocations_of(result.reservation)[0]["nodeId"] == "node-b"
