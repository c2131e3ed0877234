"""Taints and conditions keep nodes.no_schedule_reasons right inside their own transaction."""

import pytest
from django.db import transaction

from inventory.models import Node, NodeCondition, NodeTaint


def reasons(node):
    return Node.objects.values_list("no_schedule_reasons", flat=True).get(pk=node.pk)


def test_a_taint_adds_its_reason_in_the_same_transaction(make_node):
    node = make_node()
    with transaction.atomic():
        NodeTaint.objects.create(node=node, key="dedicated", value="acme")
        assert reasons(node) == ["dedicated=acme"]
    assert reasons(node) == ["dedicated=acme"]


def test_a_rolled_back_taint_leaves_no_reason(make_node):
    node = make_node()

    class Abort(Exception):
        pass

    with pytest.raises(Abort), transaction.atomic():
        NodeTaint.objects.create(node=node, key="gpu-fault", value="xid79")
        assert reasons(node) == ["gpu-fault=xid79"]
        raise Abort
    assert reasons(node) == []


def test_removing_or_softening_a_taint_removes_its_reason(make_node):
    node = make_node()
    taint = NodeTaint.objects.create(node=node, key="gpu-fault")
    NodeTaint.objects.create(node=node, key="dedicated", value="acme")
    assert reasons(node) == ["dedicated=acme", "gpu-fault"]
    NodeTaint.objects.filter(pk=taint.pk).update(effect=NodeTaint.Effect.PREFER_NO_SCHEDULE)
    assert reasons(node) == ["dedicated=acme"]
    NodeTaint.objects.filter(node=node).delete()
    assert reasons(node) == []


def test_a_prefer_no_schedule_taint_adds_no_reason(make_node):
    node = make_node()
    NodeTaint.objects.create(node=node, key="spot-only", effect=NodeTaint.Effect.PREFER_NO_SCHEDULE)
    assert reasons(node) == []


def test_conditions_block_when_ready_is_not_true_or_another_is_true(make_node):
    node = make_node()
    ready = NodeCondition.objects.create(node=node, type="Ready", status="True")
    assert reasons(node) == []
    ready.status = "False"
    ready.save()
    assert reasons(node) == ["NotReady"]
    NodeCondition.objects.create(node=node, type="GpuXidErrors", status="True")
    NodeTaint.objects.create(node=node, key="dedicated", value="acme")
    assert reasons(node) == ["dedicated=acme", "GpuXidErrors", "NotReady"]
    ready.delete()
    xid = NodeCondition.objects.get(type="GpuXidErrors")
    xid.status = "False"
    xid.save()
    assert reasons(node) == ["dedicated=acme"]


def test_reasons_of_other_nodes_are_untouched(make_node):
    a, b = make_node("node-a"), make_node("node-b")
    NodeTaint.objects.create(node=a, key="gpu-fault")
    assert reasons(a) == ["gpu-fault"]
    assert reasons(b) == []
