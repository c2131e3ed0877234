"""apply_node_report: a node's report writes its devices, health, labels and links, or nothing (database)."""

import json

import pytest
from ingest_helpers import H100, apply_node_report, apply_node_report_json, gpu_report, make_node

from inventory.ingest import IngestError
from inventory.models import Device, DeviceLink, Node, NodeLabel
from inventory.signals import node_state_changed

from topo_samples import DGX_H100

pytestmark = pytest.mark.django_db


@pytest.fixture
def signals():
    """Record node_state_changed sends as (pool_ids, woke)."""
    sent: list[tuple[set, bool]] = []

    def receiver(sender, pool_ids, woke, **kwargs):
        sent.append((pool_ids, woke))

    node_state_changed.connect(receiver, weak=False)
    yield sent
    node_state_changed.disconnect(receiver)


def test_report_creates_devices_bookable_with_their_attributes():
    node = make_node(gpus=0)

    result = apply_node_report(node, gpu_report("dgx-01", range(8)))

    assert result.created == 8
    assert result.devices == 8
    assert result.links is None
    devices = list(node.devices.order_by("index"))
    assert [d.uuid for d in devices] == [f"GPU-dgx-01-{i}" for i in range(8)]
    assert all(d.bookable and d.healthy and d.attributes == H100 for d in devices)
    assert [d.numa_node for d in devices] == [0, 0, 0, 0, 1, 1, 1, 1]


def test_report_updates_existing_devices_but_keeps_operator_bookable():
    node = make_node()
    Device.objects.filter(node=node, index=3).update(bookable=False, healthy=False)
    report = gpu_report("dgx-01", range(8))
    report["devices"][3]["attributes"] = {**H100, "eccErrors": 0}

    result = apply_node_report(node, report)

    gpu3 = node.devices.get(index=3)
    assert (gpu3.bookable, gpu3.healthy, gpu3.attributes["eccErrors"]) == (False, True, 0)
    assert result.created == 0
    assert result.became_healthy == 1
    assert node.devices.count() == 8


def test_report_marks_missing_devices_unhealthy_without_deleting_them():
    node = make_node()

    result = apply_node_report(node, gpu_report("dgx-01", range(6)))

    assert result.marked_unhealthy == 2
    assert node.devices.count() == 8
    assert set(node.devices.filter(healthy=False).values_list("index", flat=True)) == {6, 7}


def test_a_report_leaving_out_most_devices_needs_replace_and_changes_nothing_without_it():
    """A truncated report (one GPU of eight) is refused; with "replace": true the seven go unhealthy."""
    node = make_node()

    with pytest.raises(IngestError) as refused:
        apply_node_report(node, gpu_report("dgx-01", [0]))
    assert str(refused.value) == (
        "devices: the report leaves out 7 of the node's 8 healthy devices, which would mark them "
        'unhealthy; send "replace": true if they are gone'
    )
    assert not node.devices.filter(healthy=False).exists()

    result = apply_node_report(node, {**gpu_report("dgx-01", [0]), "replace": True})
    assert result.marked_unhealthy == 7


def test_a_field_left_out_of_a_listed_device_keeps_its_stored_value():
    """A device listed by uuid alone keeps its index, class, NUMA node and attributes."""
    node = make_node()
    Device.objects.filter(node=node, index=3).update(numa_node=1)

    apply_node_report(node, {"devices": [{"uuid": f"GPU-dgx-01-{i}"} for i in range(8)]})

    gpu3 = node.devices.get(uuid="GPU-dgx-01-3")
    assert (gpu3.index, gpu3.device_class, gpu3.numa_node, gpu3.attributes) == (3, "gpu", 1, H100)
    assert sorted(node.devices.values_list("index", flat=True)) == list(range(8))


def test_a_node_holds_at_most_256_devices():
    node = make_node(gpus=250)
    report = gpu_report("dgx-01", range(250))
    report["devices"] = report["devices"][:249] + [
        {"uuid": f"MIG-{i}", "index": i, "class": "mig-1g.10gb", "parent": "GPU-dgx-01-0"} for i in range(7)
    ]

    with pytest.raises(IngestError, match="devices: node dgx-01 would have 257 devices; at most 256"):
        apply_node_report(node, report)
    assert node.devices.count() == 250


def test_what_a_report_changed_is_one_row_of_the_node_history():
    from inventory.node_changelog import entries, node_history

    node = make_node(gpus=2)
    apply_node_report(node, gpu_report("dgx-01", range(3), labels={"gpu.product": "H100"}))
    apply_node_report(node, gpu_report("dgx-01", range(3), labels={"gpu.product": "H100"}))  # no change

    rows = [e for e in entries(node_history(node)) if e.action == "report"]
    assert [(e.change, e.reason) for e in rows] == [("report: 1 devices added", "node report")]


def test_report_sets_health_from_the_report():
    node = make_node()
    report = gpu_report("dgx-01", range(8))
    report["devices"][5]["healthy"] = False

    result = apply_node_report(node, report)

    assert result.marked_unhealthy == 1
    assert list(node.devices.filter(healthy=False).values_list("index", flat=True)) == [5]


def test_report_links_mig_slices_to_their_parent():
    node = make_node(gpus=0)
    report = gpu_report("dgx-01", range(1))
    report["devices"].insert(
        0, {"uuid": "MIG-a", "class": "mig-1g.10gb", "index": 0, "parent": "GPU-dgx-01-0", "healthy": True}
    )

    apply_node_report(node, report)

    mig = Device.objects.get(uuid="MIG-a")
    assert (mig.parent.uuid, mig.device_class, mig.bookable) == ("GPU-dgx-01-0", "mig-1g.10gb", True)


def test_report_writes_system_labels():
    node = make_node()

    result = apply_node_report(
        node, {"labels": {"gpu.product": "H100-SXM5-80GB", "bc.dev/driver.nvidia": "550.54"}}
    )

    assert result.labels_set == 2
    assert set(node.labels.values_list("key", "value", "source")) == {
        ("gpu.product", "H100-SXM5-80GB", "system"),
        ("bc.dev/driver.nvidia", "550.54", "system"),
    }


def test_report_replaces_an_operator_label_with_the_same_key():
    node = make_node()
    NodeLabel.objects.create(node=node, key="bc.dev/driver.nvidia", value="fake", source="operator")

    apply_node_report(node, {"labels": {"bc.dev/driver.nvidia": "550.54"}})

    label = node.labels.get(key="bc.dev/driver.nvidia")
    assert (label.value, label.source) == ("550.54", "system")


def test_report_removes_stale_system_labels_and_keeps_operator_labels():
    node = make_node()
    NodeLabel.objects.create(node=node, key="team", value="research", source="operator")
    apply_node_report(node, {"labels": {"gpu.product": "H100-SXM5-80GB", "cuda.driver.major": "12"}})

    result = apply_node_report(node, {"labels": {"gpu.product": "H100-SXM5-80GB"}})

    assert (result.labels_set, result.labels_removed) == (0, 1)
    assert set(node.labels.values_list("key", "source")) == {("gpu.product", "system"), ("team", "operator")}


def test_report_without_labels_leaves_labels_alone():
    node = make_node()
    apply_node_report(node, {"labels": {"gpu.product": "H100-SXM5-80GB"}})

    apply_node_report(node, gpu_report("dgx-01", range(8)))

    assert list(node.labels.values_list("key", flat=True)) == ["gpu.product"]


def test_report_refuses_a_bad_label_key_and_writes_nothing():
    node = make_node(gpus=0)
    report = gpu_report("dgx-01", range(8), labels={"gpu.product": "H100", "9lives": "x"})

    with pytest.raises(IngestError, match=r"labels\['9lives'\]: Label keys start with a letter"):
        apply_node_report(node, report)

    assert not node.devices.exists()
    assert not node.labels.exists()


def test_report_refuses_a_device_of_another_node_as_a_conflict():
    make_node("dgx-02")
    node = make_node(gpus=0)
    report = gpu_report("dgx-01", range(2))
    report["devices"][1]["uuid"] = "GPU-dgx-02-1"

    with pytest.raises(IngestError, match="GPU-dgx-02-1 belongs to node dgx-02, not dgx-01") as caught:
        apply_node_report(node, report)

    assert caught.value.code == "CONFLICT"
    assert not node.devices.exists()


def test_report_with_topology_syncs_links_in_the_same_call():
    node = make_node(gpus=0)

    result = apply_node_report(node, gpu_report("dgx-01", range(8), topology=DGX_H100))

    assert result.links == 28
    assert DeviceLink.objects.filter(node=node, rank="NV", nvlinks=18).count() == 28


def test_report_with_bad_topology_writes_nothing():
    node = make_node(gpus=0)

    with pytest.raises(IngestError, match="topology: line 2, column GPU1: 'NVX' is not a link type"):
        apply_node_report(node, gpu_report("dgx-01", range(8), topology=DGX_H100.replace("NV18", "NVX", 1)))

    assert not node.devices.exists()


def test_report_whose_topology_names_an_unreported_gpu_rolls_back():
    node = make_node(gpus=0)

    with pytest.raises(IngestError, match="GPU4: node dgx-01 has no gpu device at index 4"):
        apply_node_report(node, gpu_report("dgx-01", range(4), topology=DGX_H100, labels={"a": "b"}))

    assert not node.devices.exists()
    assert not node.labels.exists()


@pytest.mark.parametrize(
    ("report", "message"),
    [
        ([], "report: must be a JSON object"),
        ({"device": []}, "report: unknown field 'device'"),
        ({"devices": {}}, "devices: must be a list"),
        ({"devices": [{"class": "gpu"}]}, r"devices\[0\].uuid: must be at most 100 letters"),
        ({"devices": [{"uuid": "GPU-a\n", "index": 0}]}, r"devices\[0\].uuid: .*no spaces or line breaks"),
        (
            {"devices": [{"uuid": "GPU-a", "index": 0, "class": "gpu\n"}]},
            r"devices\[0\].class: .*line breaks",
        ),
        (
            {"devices": [{"uuid": "GPU-a", "numaNode": 99999}]},
            r"devices\[0\].numaNode: must be an integer from 0 to 1023",
        ),
        ({"replace": "yes"}, "replace: must be true or false"),
        (
            {"devices": [{"uuid": f"GPU-{i}", "index": i} for i in range(257)]},
            "devices: 257 devices; a report lists at most 256",
        ),
        ({"labels": {f"k{i}": "v" for i in range(65)}}, "labels: 65 labels; a report sets at most 64"),
        (
            {"topology": DGX_H100.replace("NV18", "NV40000")},
            "topology: .*'NV40000' is not a link type: NV counts at most 64 links",
        ),
        (
            {"devices": [{"uuid": "GPU-a", "index": -1}]},
            r"devices\[0\].index: must be a non-negative integer",
        ),
        ({"devices": [{"uuid": "GPU-a", "index": True}]}, r"devices\[0\].index"),
        ({"devices": [{"uuid": "GPU-a", "numaNode": "0"}]}, r"devices\[0\].numaNode"),
        ({"devices": [{"uuid": "GPU-a", "healthy": "yes"}]}, r"devices\[0\].healthy: must be true or false"),
        ({"devices": [{"uuid": "GPU-a", "attributes": []}]}, r"devices\[0\].attributes: must be an object"),
        ({"devices": [{"uuid": "GPU-a", "colour": "green"}]}, r"devices\[0\].colour: unknown field"),
        (
            {"devices": [{"uuid": "GPU-a"}, {"uuid": "GPU-a", "index": 1}]},
            r"devices\[1\].uuid: GPU-a is listed twice",
        ),
        (
            {"devices": [{"uuid": "GPU-a", "index": 0}, {"uuid": "GPU-b", "index": 0}]},
            r"devices\[1\].index: GPU-a already has gpu index 0",
        ),
        ({"devices": [{"uuid": "GPU-a"}]}, r"devices\[0\].index: required for a new device \(GPU-a\)"),
        (
            {"devices": [{"uuid": "MIG-a", "parent": "GPU-x"}]},
            r"devices\[0\].parent: GPU-x is not another device",
        ),
        (
            {"devices": [{"uuid": "G"}, {"uuid": "M", "parent": "G"}, {"uuid": "S", "parent": "M"}]},
            r"devices\[2\].parent: M is itself a partition",
        ),
        ({"labels": []}, "labels: must be an object"),
        ({"labels": {"gpu.count": 8}}, r"labels\['gpu.count'\]: the value must be a string"),
        ({"labels": {"": "x"}}, r"labels\[''\]: Label keys start with a letter"),
        ({"topology": 42}, "topology: must be the text of"),
        ({"topology": "nothing here"}, "topology: no GPU header"),
    ],
)
def test_report_refuses_malformed_input_naming_the_field(report, message):
    node = make_node(gpus=0)

    with pytest.raises(IngestError, match=message) as caught:
        apply_node_report(node, report)

    assert caught.value.code == "INVALID_INPUT"
    assert not node.devices.exists()


def test_report_signals_a_wake_when_a_device_turns_healthy(signals):
    node = make_node()
    Device.objects.filter(node=node, index=2).update(healthy=False)

    apply_node_report(node, gpu_report("dgx-01", range(8)))

    assert signals == [({node.pool_id}, True)]


def test_report_signals_without_wake_when_devices_only_turn_unhealthy(signals):
    node = make_node()

    apply_node_report(node, gpu_report("dgx-01", range(7)))

    assert signals == [({node.pool_id}, False)]


def test_report_signals_a_wake_for_new_healthy_devices_only(signals):
    node = make_node(gpus=0)
    report = gpu_report("dgx-01", range(2))
    report["devices"][1]["healthy"] = False

    apply_node_report(node, {"devices": report["devices"][1:]})
    apply_node_report(node, report)

    assert signals == [({node.pool_id}, False), ({node.pool_id}, True)]


def test_report_does_not_signal_when_no_health_changed(signals):
    node = make_node()

    apply_node_report(node, gpu_report("dgx-01", range(8), labels={"gpu.product": "H100"}))

    assert signals == []


def test_report_json_applies_to_the_named_node():
    make_node(gpus=0)

    result = apply_node_report_json("dgx-01", json.dumps(gpu_report("dgx-01", range(2))))

    assert result.created == 2


def test_report_json_refuses_bad_json_and_unknown_nodes():
    make_node(gpus=0)

    with pytest.raises(IngestError, match="report: not valid JSON"):
        apply_node_report_json("dgx-01", "{devices: []}")
    with pytest.raises(Node.DoesNotExist):
        apply_node_report_json("nope", "{}")
