"""Drain: the node is cordoned, bookings that have not started move off, running ones are listed."""

from datetime import timedelta

import pytest

from capacity.audit import audit
from capacity.placement import CapacityError
from capacity.services.reservations import affected, drain_state
from inventory import services as nodes
from inventory.models import Node
from maintenance.drain import drain

from booking import NOW, ask, atoms_of, reserve


def test_drain_moves_what_has_not_started_and_lists_what_runs_until_when(tenant, make_node):
    """node-a: 4 GPUs, 2 running for 12 h and 2 booked for tomorrow; node-b: empty."""
    make_node("node-a", gpus=4)
    make_node("node-b", gpus=4)
    running = reserve(ask(2, hours=12)).reservation
    later = reserve(ask(2, start=24)).reservation
    [(node, _)] = atoms_of(running)
    assert atoms_of(later)[0][0] == node
    assert affected(node, NOW) == (1, 1)
    result = drain(node, reason="bad fan", now=NOW)
    assert (result.moved, result.waiting) == ([later.pk], [])
    assert [(r.reservation, r.ends_at) for r in result.running] == [(running.pk, NOW + timedelta(hours=12))]
    assert result.until == NOW + timedelta(hours=12)
    assert atoms_of(later)[0][0] != node
    drained = Node.objects.get(name=node)
    assert (drained.cordoned, drained.drain_reason) == (True, "bad fan")
    assert drain_state(drained, NOW) == ("draining", NOW + timedelta(hours=12))
    assert drain_state(drained, NOW + timedelta(hours=13)) == ("drained", None)
    later.refresh_from_db()
    assert later.conditions[0]["reason"] == "Drained"
    nodes.uncordon(node)
    assert drain_state(Node.objects.get(name=node), NOW) is None
    assert audit() == []


def test_a_booking_with_nowhere_to_go_stays_and_says_so(tenant, make_node):
    make_node("node-a", gpus=2)
    later = reserve(ask(2, start=24)).reservation
    result = drain("node-a", now=NOW)
    assert (result.moved, result.waiting, result.running) == ([], [later.pk], [])
    later.refresh_from_db()
    assert later.condition("RepairPending")["message"].startswith("node-a is draining: kept on node-a")
    assert audit() == []


def test_draining_an_unknown_node_is_not_found(db):
    with pytest.raises(CapacityError) as err:
        drain("nope")
    assert err.value.code == "NOT_FOUND"


def test_a_booking_a_drain_could_not_move_moves_once_room_frees(tenant, make_node):
    from capacity import services
    from capacity.services.repair import repair_pools

    make_node("node-a", gpus=2)
    make_node("node-b", gpus=2)
    blocker = reserve(ask(2, start=0, hours=48, excludeNodes=["node-a"])).reservation
    later = reserve(ask(2, start=24)).reservation  # node-b is full: node-a
    assert drain("node-a", now=NOW).waiting == [later.pk]
    services.release(blocker.pk, now=NOW)
    assert repair_pools([later.pool_id], now=NOW).repaired == [later.pk]
    assert atoms_of(later)[0][0] == "node-b"
    assert audit() == []
