"""Count atoms on cordoned nodes (not in maintenance) in their own bucket, no longer in maintenance.

The stored rows are moved in the same migration, so check_capacity finds no drift right after it.
"""

from django.db import migrations, models

# Atoms (devices not split into MIG slices) on nodes the bucket CASE puts in 'cordoned': eligible
# hosts, not in maintenance, cordoned.
MOVE = """
UPDATE capacity_poolcapacityrollup r
   SET cordoned = m.n, maintenance = r.maintenance - m.n
  FROM (SELECT n.pool_id, d.device_class, count(*) AS n
          FROM inventory_device d
          JOIN inventory_node n ON n.id = d.node_id
          JOIN inventory_pool p ON p.id = n.pool_id
         WHERE n.cordoned AND NOT n.maintenance
           AND n.role = 'host' AND n.trust <> 'tenant-controlled'
           AND (n.owner_tenant_id IS NULL OR n.owner_tenant_id = p.owner_tenant_id)
           AND NOT EXISTS (SELECT 1 FROM inventory_device c WHERE c.parent_id = d.id)
         GROUP BY n.pool_id, d.device_class) m
 WHERE r.pool_id = m.pool_id AND r.device_class = m.device_class
"""

BACK = "UPDATE capacity_poolcapacityrollup SET maintenance = maintenance + cordoned"


class Migration(migrations.Migration):
    dependencies = [
        ("capacity", "0006_reservation_preempted"),
        ("inventory", "0008_taint_key_message"),
    ]

    operations = [
        migrations.AddField(
            model_name="poolcapacityrollup",
            name="cordoned",
            field=models.IntegerField(default=0, help_text="Cordoned nodes not in maintenance."),
        ),
        migrations.RunSQL(MOVE, BACK, elidable=False),
    ]
