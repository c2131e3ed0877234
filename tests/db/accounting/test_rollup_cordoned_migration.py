"""The migration that splits cordoned from maintenance moves the stored counts: no drift after it."""

import importlib

from django.db import connection

from capacity.audit import audit
from capacity.models import PoolCapacityRollup
from inventory import services as nodes
from inventory.models import Device

migration = importlib.import_module("capacity.migrations.0007_rollup_cordoned_bucket")


def test_the_migration_moves_cordoned_atoms_out_of_maintenance(tenant, make_node, other_tenant):
    """
    node-a cordoned (4 atoms, one GPU split into 2 MIG slices: 3 gpu + 2 mig)
    node-b cordoned and in maintenance (stays in maintenance)    node-c in maintenance
    node-d cordoned but owned by another tenant (excluded)       node-e schedulable
    """
    node_a = make_node("node-a", gpus=4)
    gpu = Device.objects.get(uuid="GPU-node-a-0")
    for i in range(2):
        Device.objects.create(node=node_a, uuid=f"MIG-a-{i}", device_class="mig-1g.10gb", parent=gpu, index=i)
    for name in ("node-b", "node-c", "node-d", "node-e"):
        make_node(name, gpus=2)
    nodes.cordon("node-a")
    nodes.cordon("node-b")
    nodes.set_maintenance("node-b", True)
    nodes.set_maintenance("node-c", True)
    nodes.cordon("node-d")
    from inventory.models import Node

    Node.objects.filter(name="node-d").update(owner_tenant=other_tenant)
    from capacity.rollups import refresh_rollups

    refresh_rollups([node_a.pool_id])
    with connection.cursor() as cur:
        cur.execute(migration.BACK)  # the rows as the old bucket SQL stored them
        cur.execute("UPDATE capacity_poolcapacityrollup SET cordoned = 0")
    old = dict(PoolCapacityRollup.objects.values_list("device_class", "maintenance"))
    assert old == {"gpu": 3 + 2 + 2, "mig-1g.10gb": 2}
    with connection.cursor() as cur:
        cur.execute(migration.MOVE)
    rows = {r.device_class: (r.maintenance, r.cordoned) for r in PoolCapacityRollup.objects.all()}
    assert rows == {"gpu": (4, 3), "mig-1g.10gb": (0, 2)}
    assert audit() == []
