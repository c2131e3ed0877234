"""Operator actions on nodes leave a history: who did what, when and why (django-simple-history)."""

import pytest

from inventory import services as inventory
from inventory.changelog import recording
from inventory.errors import InventoryError
from inventory.ingest import Reporter, apply_node_report
from inventory.models import Node, NodeLabel
from inventory.node_changelog import entries, node_history, state_entries

pytestmark = pytest.mark.django_db


@pytest.fixture
def node(site, tenant):
    from inventory.models import Pool

    pool = Pool.objects.create(slug="p", name="P", site=site)
    pool.tenants.add(tenant)
    return Node.objects.create(name="node-a", pool=pool)


def changes(node):
    """Return (actor, action, change, reason) of the node's history, oldest first."""
    return [(e.actor, e.action, e.change, e.reason) for e in reversed(entries(node_history(node)))]


def test_each_operator_action_is_recorded_with_its_words_and_reason(node, tenant):
    with recording(actor="ops-bot"):
        inventory.cordon(node, reason="bad fan")
        inventory.uncordon(node)
        inventory.set_maintenance(node, True, reason="firmware")
        inventory.set_maintenance(node, False)
        inventory.add_taint(node, "gpu-fault", "true", reason="xid 79")
        inventory.add_taint(node, "gpu-fault", "false", "PreferNoSchedule")
        inventory.remove_taint(node, "gpu-fault", reason="fixed")
        inventory.dedicate(node, "acme", reason="contract")
        inventory.dedicate(node, None)
        inventory.set_label(node, "rack", "r1")
        inventory.set_label(node, "rack", "r2", reason="moved")
        inventory.remove_label(node, "rack")
    assert changes(node)[1:] == [
        ("ops-bot", "cordon", "cordoned", "bad fan"),
        ("ops-bot", "uncordon", "uncordoned", ""),
        ("ops-bot", "maintenance-on", "maintenance started", "firmware"),
        ("ops-bot", "maintenance-off", "maintenance ended", ""),
        ("ops-bot", "taint-add", "taint gpu-fault=true:NoSchedule added", "xid 79"),
        (
            "ops-bot",
            "taint-change",
            "taint gpu-fault: gpu-fault=true:NoSchedule → gpu-fault=false:PreferNoSchedule",
            "",
        ),
        ("ops-bot", "taint-remove", "taint gpu-fault=false:PreferNoSchedule removed", "fixed"),
        ("ops-bot", "dedicate", "dedicated to acme", "contract"),
        ("ops-bot", "undedicate", "dedication to acme ended", ""),
        ("ops-bot", "label-set", "label rack=r1 set", ""),
        ("ops-bot", "label-set", "label rack: r1 → r2", "moved"),
        ("ops-bot", "label-remove", "label rack=r2 removed", ""),
    ]
    assert changes(node)[0] == ("system", "create", "node created", "")


def test_an_action_that_changes_nothing_leaves_no_row(node):
    inventory.cordon(node, reason="first")
    before = node_history(node).count()
    inventory.cordon(node, reason="again")
    inventory.add_taint(node, "k", "v")
    inventory.add_taint(node, "k", "v")
    inventory.set_label(node, "rack", "r1")
    inventory.set_label(node, "rack", "r1")
    assert node_history(node).count() == before + 2
    assert state_entries(Node.objects.get(pk=node.pk))["cordoned"].reason == "first"


def test_a_drain_is_one_row_and_an_uncordon_ends_it(node):
    from datetime import UTC, datetime

    inventory.start_drain(node, "psu swap", datetime(2026, 12, 2, 12, tzinfo=UTC))
    inventory.uncordon(node, reason="psu ok")
    assert changes(node)[1:] == [
        ("system", "drain", "drain started", "psu swap"),
        ("system", "uncordon", "uncordoned; drain ended", "psu ok"),
    ]


def test_the_state_entries_say_who_when_and_why_for_the_current_state(node):
    from datetime import UTC, datetime

    assert state_entries(node) == {"cordoned": None, "maintenance": None, "drain": None}
    with recording(actor="manage.py drain (root)"):
        inventory.start_drain(node, "psu swap", datetime(2026, 12, 2, 12, tzinfo=UTC))
    inventory.set_maintenance(node, True, reason="firmware")
    found = state_entries(Node.objects.get(pk=node.pk))
    assert (found["drain"].actor, found["drain"].reason) == ("manage.py drain (root)", "psu swap")
    assert found["cordoned"] == found["drain"]
    assert (found["maintenance"].actor, found["maintenance"].reason) == ("system", "firmware")


@pytest.mark.parametrize("reason", ["x" * 201, "bad\x07fan", 3])
def test_a_reason_too_long_or_with_control_characters_is_refused_and_nothing_changes(node, reason):
    count = node_history(node).count()
    with pytest.raises(InventoryError) as err:
        inventory.cordon(node, reason=reason)
    assert (err.value.code, err.value.message) == (
        "INVALID_INPUT",
        "reason must be text of at most 200 characters",
    )
    assert not Node.objects.get(pk=node.pk).cordoned
    assert node_history(node).count() == count


def test_a_node_report_records_real_label_changes_only_as_by_the_reporting_system(node):
    report = {"labels": {"bc.dev/gpu.count": "8", "bc.dev/rack": "r1"}}
    with recording(actor="node-agent", reason="node report"):
        apply_node_report(node, report, by=Reporter.operator("ops"))
        for _ in range(5):
            apply_node_report(node, report, by=Reporter.operator("ops"))  # a heartbeat that repeats itself
        apply_node_report(
            node, {"labels": {"bc.dev/gpu.count": "8", "bc.dev/rack": "r2"}}, by=Reporter.operator("ops")
        )
    assert changes(node)[1:] == [
        ("node-agent", "label-set", "system label bc.dev/gpu.count=8 set", "node report"),
        ("node-agent", "label-set", "system label bc.dev/rack=r1 set", "node report"),
        ("node-agent", "label-set", "system label bc.dev/rack: r1 → r2", "node report"),
    ]
    assert NodeLabel.objects.get(node=node, key="bc.dev/rack").value == "r2"


def test_a_change_too_long_for_its_column_is_recorded_cut_short(node):
    """A 253-character key changing between two 253-character values says more than 600 characters."""
    key = "k" * 253
    inventory.set_label(node, key, "x" * 253)
    inventory.set_label(node, key, "y" * 253)
    change = changes(node)[-1][2]
    assert len(change) == 600
    assert change == f"label {key}: {'x' * 253} → {'y' * 253}"[:599] + "…"
